import type pg from 'pg';
import type { Db } from '../../shared/db.js';
import { orgDomain } from '../../shared/domains.js';
import type { OrgDomainRef } from '../../shared/org-domains.read-model.js';
import {
  countOrgLocations,
  type LocationRef,
  listOrgLocations,
  prepareLocationByRef,
} from '../locations/location.read-model.js';
import { toLocationView } from '../locations/location.view.js';
import { findOrgIdByRef, prepareOrgByRef } from '../orgs/org.read-model.js';
import { toOrgView } from '../orgs/org.view.js';
import type { RecordCache } from './record-cache.js';
import {
  type Rendered,
  rendered,
  serializeLocation,
  serializeLocationsList,
  serializeOrg,
} from './rendered.view.js';

/**
 * The single-record reads of the API, each as its sent JSON and ETag (see rendered.view.ts).
 * undefined: no record has that domain.
 */
export class RenderedRecords {
  private readonly orgByRef: ReturnType<typeof prepareOrgByRef>;
  private readonly locationByRef: ReturnType<typeof prepareLocationByRef>;

  constructor(
    private readonly db: Db,
    private readonly pool: pg.Pool,
    private readonly suffix: string,
    private readonly cache: RecordCache | null,
  ) {
    this.orgByRef = prepareOrgByRef(db);
    this.locationByRef = prepareLocationByRef(db);
  }

  org(ref: OrgDomainRef): Promise<Rendered | undefined> {
    if (!this.cache) return this.readOrg(ref);
    const key = ref.kind === 'org' ? `o:${ref.uid}.${ref.cc}` : `op:${ref.slug}`;
    return this.cache.get(key, () => this.readOrg(ref));
  }

  location(ref: LocationRef): Promise<Rendered | undefined> {
    if (!this.cache) return this.readLocation(ref);
    const key = ref.kind === 'location' ? `l:${ref.uid}.${ref.cc}` : `lp:${ref.slug}`;
    return this.cache.get(key, () => this.readLocation(ref));
  }

  /**
   * A search answer (the rendered list of Orgs) under `key`, from the cache while no record changed
   * since it was computed (record-cache.ts: exactly as fresh as a search of Postgres itself), else
   * from `answer`, kept only when `exact()` says the answer was the database's exact one.
   */
  async searchAnswer(key: string, answer: () => Promise<Rendered>, exact: () => boolean): Promise<Rendered> {
    if (!this.cache) return answer();
    return (await this.cache.get(`s:${key}`, answer, exact)) ?? answer();
  }

  private async readOrg(ref: OrgDomainRef): Promise<Rendered | undefined> {
    const row =
      ref.kind === 'org'
        ? await this.orgByRef.stable.first(this.pool, { uid: ref.uid, cc: ref.cc })
        : await this.orgByRef.public.first(this.pool, { slug: ref.slug });
    return row && rendered(serializeOrg(toOrgView(row, this.suffix)));
  }

  private async readLocation(ref: LocationRef): Promise<Rendered | undefined> {
    const row =
      ref.kind === 'location'
        ? await this.locationByRef.stable.first(this.pool, { uid: ref.uid, cc: ref.cc })
        : await this.locationByRef.public.first(this.pool, { slug: ref.slug });
    if (!row) return undefined;
    const org = orgDomain(row.org_uid, row.org_domain_cc, this.suffix);
    return rendered(serializeLocation(toLocationView(row, row.address, org, this.suffix)));
  }

  /** One page of an Org's Locations (`{total, results}`); the tag covers that page. */
  async orgLocations(ref: OrgDomainRef, limit: number, offset: number): Promise<Rendered | undefined> {
    const org = await findOrgIdByRef(this.db, ref);
    if (!org) return undefined;
    const [total, rows] = await Promise.all([
      countOrgLocations(this.db, org.id),
      listOrgLocations(this.db, org.id, limit, offset),
    ]);
    const domain = orgDomain(org.uid, org.domain_cc, this.suffix);
    const results = rows.map((l) => toLocationView(l, l.address, domain, this.suffix));
    return rendered(serializeLocationsList({ total, results }));
  }
}
