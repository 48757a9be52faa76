import type { Db } from '../../shared/db.js';
import { orgDomain } from '../../shared/domains.js';
import { toLocationView } from '../views/location.view.js';
import { toOrgView } from '../views/org.view.js';
import {
  type Rendered,
  rendered,
  serializeLocation,
  serializeLocationsList,
  serializeOrg,
} from '../views/rendered.view.js';
import {
  countOrgLocations,
  findLocationByRef,
  type LocationRef,
  listOrgLocations,
} from './location.read-model.js';
import { findOrgByRef, findOrgIdByRef, type OrgRef } from './org.read-model.js';

/**
 * The single-record reads of the API, each as its sent JSON and ETag (see rendered.view.ts).
 * undefined: no record has that domain.
 */
export class RenderedRecords {
  constructor(
    private readonly db: Db,
    private readonly suffix: string,
  ) {}

  async org(ref: OrgRef): Promise<Rendered | undefined> {
    const row = await findOrgByRef(this.db, ref);
    return row && rendered(serializeOrg(toOrgView(row, this.suffix)));
  }

  async location(ref: LocationRef): Promise<Rendered | undefined> {
    const row = await findLocationByRef(this.db, ref);
    if (!row) return undefined;
    const org = orgDomain(row.org_uid, row.org_domain_cc, this.suffix);
    return rendered(serializeLocation(toLocationView(row, row.address, org, this.suffix)));
  }

  /** One page of an Org's Locations (`{total, results}`); the tag covers that page. */
  async orgLocations(ref: OrgRef, limit: number, offset: number): Promise<Rendered | undefined> {
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
