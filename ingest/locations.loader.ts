import { createHash } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../shared/database.js';
import { slugify } from '../shared/domains.js';
import { FeedFormatError } from '../shared/errors.js';
import { allocateSlugs, recordSlugs } from '../shared/public-domains.js';
import type { BatchOutcome, BatchRow, FinishOutcome, RowIssue } from './feed-handler.js';
import type { NewIssue } from './import-issues.repository.js';
import { deleteRunKeys, recordRunKeys } from './import-run-keys.repository.js';
import type { LocationColumns, LocationField } from './locations.headers.js';
import type { LocationRow, OrgRef } from './locations.normalize.js';
import { type OrgInfo, OrgResolver, resolveOrgOption } from './locations.orgs.js';
import {
  columnsToRead,
  contentHash,
  encodeLocation,
  mergeAddress,
  mergeLocation,
} from './locations.records.js';
import {
  type AddressWrite,
  closeMissing,
  type ExistingLocation,
  findLocationStates,
  insertAddresses,
  insertLocations,
  type LocationWrite,
  readLocations,
  settleDefaults,
  storeFingerprints,
  takeIds,
  updateAddresses,
  updateLocations,
} from './locations.repository.js';

/**
 * The one place that writes Locations. Per batch: resolve the Orgs the rows name, read the
 * Locations that exist for those (Org, store code) keys, merge and hash in memory, then one
 * statement per kind of write. Unchanged rows are not written; a changed row bumps its Location
 * (and its Address, if that changed) by exactly one, however often the run touches it.
 */

/**
 * What normalize hands over. A row refused for its content (bad hours, no name) still names its
 * Location, so it travels on to the loader as `refused`: the loader records its key, so that a
 * `--full` run does not close a Location only because this month's row had a typo.
 */
export type LocationRecord =
  /** `clean`: the row produced no warnings (only such rows get a fingerprint, see below). */
  | { kind: 'row'; row: LocationRow; clean: boolean }
  | { kind: 'refused'; issue: RowIssue; code: string; org: OrgRef };

export interface LocationsRunOptions {
  runId: number;
  full: boolean;
  org: string | undefined;
  domainSuffix: string;
  registrationCountry: string;
  /** The sheet's header cells: part of every row fingerprint (the same cells mean other things under another header). */
  header: readonly string[];
}

/**
 * Bump when normalizing or merging a row would give another result for the same sheet text (a new
 * column rule, a fix in the hours grammar): stored fingerprints then stop matching and every row is
 * merged and compared again once.
 */
const FINGERPRINT_VERSION = 'locations-1';

interface Write {
  p: Pending;
  loc: LocationWrite;
  addr: AddressWrite;
}

interface Update extends Write {
  e: ExistingLocation;
  addressChanged: boolean;
}

interface Pending {
  line: number;
  raw: string;
  org: OrgInfo;
  key: string;
  row: LocationRow;
  /**
   * Hash of the row's text, its sheet header and FINGERPRINT_VERSION. A stored Location with the same
   * fingerprint was written from (or found unchanged by) this very row, so it is unchanged without
   * merging and hashing it again: that is most of the work of a re-import. Null for a row with
   * warnings, so it is always normalized again and its warnings reported again.
   */
  fingerprint: string | null;
}

const keyOf = (orgId: number, code: string) => `${orgId}:${code}`;
const isOwnSlug = (slug: string, base: string) =>
  slug === base || (slug.startsWith(`${base}-`) && /^\d+$/.test(slug.slice(base.length + 1)));

/** Public Location domain label: the Org's informal name (or name) and the Location's city (or name). */
const slugBase = (org: OrgInfo, city: string | null, name: string) =>
  slugify(`${org.informal_name ?? org.name} ${city ?? name}`, 'location');

export class LocationsLoader {
  private fallback: OrgInfo | undefined;
  private readonly read: ReturnType<typeof columnsToRead>;
  private readonly fingerprintSeed: string;

  constructor(
    private readonly columns: LocationColumns,
    private readonly options: LocationsRunOptions,
  ) {
    this.read = columnsToRead(columns);
    this.fingerprintSeed = createHash('md5')
      .update(`${FINGERPRINT_VERSION}\0${options.header.join('\0')}`)
      .digest('base64url');
  }

  private fingerprintOf(raw: string): string {
    return createHash('md5').update(this.fingerprintSeed).update(raw).digest('base64url');
  }

  private cachedResolver: OrgResolver | undefined;

  /** The run's Org resolver; `--org` is looked up once, and an unknown one fails the run. */
  private async orgs(trx: Transaction<Database>): Promise<OrgResolver> {
    if (this.cachedResolver) return this.cachedResolver;
    const { domainSuffix, registrationCountry } = this.options;
    if (this.options.org !== undefined) {
      const found = await resolveOrgOption(trx, this.options.org, { domainSuffix, registrationCountry });
      if (typeof found === 'string') throw new FeedFormatError(found);
      this.fallback = found;
    }
    this.cachedResolver = new OrgResolver({
      domainSuffix,
      registrationCountry,
      ...(this.fallback ? { fallback: this.fallback } : {}),
    });
    return this.cachedResolver;
  }

  private label(field: LocationField): string {
    return this.columns.name[field] ?? field;
  }

  async loadBatch(
    trx: Transaction<Database>,
    rows: readonly BatchRow<LocationRecord>[],
  ): Promise<BatchOutcome> {
    const { runId } = this.options;
    const resolver = await this.orgs(trx);
    const refs = rows.map((r) => (r.record.kind === 'row' ? r.record.row.org : r.record.org));
    const found = await resolver.resolve(
      trx,
      refs,
      rows.map((r) => r.record.kind === 'row'),
    );

    const issues: NewIssue[] = [];
    const refusedKeys: string[] = [];
    // Duplicate keys inside the batch: the later row wins (as for the register).
    const last = new Map<string, Pending>();
    rows.forEach((r, i) => {
      const lookup = found[i]!;
      const reject = (issue: RowIssue) =>
        issues.push({ severity: 'rejected', line: r.line, raw: r.raw, ...issue });
      if (r.record.kind === 'refused') {
        reject(r.record.issue);
        if (lookup.ok) refusedKeys.push(keyOf(lookup.org.id, r.record.code));
        return;
      }
      if (!lookup.ok) {
        reject({ column: this.label(lookup.field), reason: lookup.reason });
        return;
      }
      const key = keyOf(lookup.org.id, r.record.row.location.code);
      last.delete(key);
      const fingerprint = r.record.clean ? this.fingerprintOf(r.raw) : null;
      last.set(key, { line: r.line, raw: r.raw, org: lookup.org, key, row: r.record.row, fingerprint });
    });
    const unique = [...last.values()];
    let duplicates = rows.length - issues.length - unique.length;
    const firstSeen = await recordRunKeys(trx, runId, [...unique.map((p) => p.key), ...refusedKeys]);
    const states = await findLocationStates(
      trx,
      unique.map((p) => ({ orgId: p.org.id, code: p.row.location.code })),
    );
    const stateByKey = new Map(states.map((e) => [keyOf(e.org_id, e.code), e]));

    // First the rows whose stored Location came from this very row text: unchanged, nothing to merge.
    const repeats = new Set<Pending>();
    const toMerge: Pending[] = [];
    let unchanged = 0;
    for (const p of unique) {
      const repeat = !firstSeen.has(p.key);
      if (repeat) {
        duplicates++;
        repeats.add(p);
      }
      const e = stateByKey.get(p.key);
      if (e && e.closed_date === null && p.fingerprint !== null && e.source_fingerprint === p.fingerprint) {
        if (!repeat) unchanged++;
      } else toMerge.push(p);
    }
    const existing = await readLocations(
      trx,
      toMerge.flatMap((p) => stateByKey.get(p.key) ?? []),
      this.read,
    );
    const byKey = new Map(existing.map((e) => [keyOf(e.org_id, e.code), e]));

    const inserts: Write[] = [];
    const updates: Update[] = [];
    const refreshed: { id: number; fingerprint: string }[] = [];
    for (const p of toMerge) {
      const repeat = repeats.has(p);
      const e = byKey.get(p.key);
      const content = mergeLocation(p.row.location, e?.stored);
      const address = mergeAddress(p.row.address, e?.storedAddress);
      const { encoded, hash } = encodeLocation(content);
      const addrHash = contentHash(address);
      const addressChanged = e === undefined || e.address_id === null || e.address_hash !== addrHash;
      if (e && e.content_hash === hash && !addressChanged && e.closed_date === null) {
        if (!repeat) unchanged++;
        if (p.fingerprint !== null && e.source_fingerprint !== p.fingerprint) {
          refreshed.push({ id: e.id, fingerprint: p.fingerprint });
        }
        continue;
      }
      const cc = e?.domain_cc ?? address.country_code.toLowerCase();
      const write: Write = {
        p,
        addr: { id: e?.address_id ?? 0, domain_cc: cc, content: address, hash: addrHash },
        loc: {
          id: e?.id ?? 0,
          org_id: p.org.id,
          code: p.row.location.code,
          domain_cc: cc,
          public_slug: e?.public_slug ?? '',
          address_id: e?.address_id ?? 0,
          position: p.line,
          content,
          encoded,
          hash,
          fingerprint: p.fingerprint,
          // A Location the run already wrote (a repeated key) is not bumped a second time.
          bump: e === undefined || e.last_run_id !== runId,
        },
      };
      if (e) updates.push({ ...write, e, addressChanged });
      else inserts.push(write);
    }
    await this.writeInserts(trx, inserts);
    await this.writeUpdates(trx, updates);
    await storeFingerprints(trx, refreshed);

    const changedOrgIds = [...new Set([...inserts, ...updates].map((x) => x.p.org.id))];
    const counted = (xs: { p: Pending }[]) => xs.filter((x) => firstSeen.has(x.p.key)).length;
    return {
      inserted: counted(inserts),
      updated: counted(updates),
      unchanged,
      duplicates,
      changedOrgIds,
      issues,
    };
  }

  private async writeInserts(trx: Transaction<Database>, inserts: Write[]): Promise<void> {
    if (inserts.length === 0) return;
    const { locations: ids, addresses: addressIds } = await takeIds(trx, inserts.length, inserts.length);
    const slugs = await allocateSlugs(
      trx,
      'location',
      inserts.map((x) => ({ base: slugBase(x.p.org, x.addr.content.city, x.loc.content.name) })),
    );
    inserts.forEach((x, i) => {
      x.addr.id = addressIds[i]!;
      x.loc.id = ids[i]!;
      x.loc.address_id = addressIds[i]!;
      x.loc.public_slug = slugs[i]!;
    });
    await insertAddresses(
      trx,
      inserts.map((x) => x.addr),
    );
    await insertLocations(
      trx,
      inserts.map((x) => x.loc),
      this.options.runId,
    );
    await recordSlugs(
      trx,
      'location',
      inserts.map((x) => ({ slug: x.loc.public_slug, ownerId: x.loc.id })),
    );
  }

  private async writeUpdates(trx: Transaction<Database>, updates: Update[]): Promise<void> {
    if (updates.length === 0) return;
    // A Location whose name parts changed (new city, renamed Org) gets a new public label; the old
    // one stays in location_public_domains and keeps resolving to it.
    const renamed = updates
      .map((u) => ({ u, base: slugBase(u.p.org, u.addr.content.city, u.loc.content.name) }))
      .filter(({ u, base }) => !isOwnSlug(u.e.public_slug, base));
    const slugs = await allocateSlugs(
      trx,
      'location',
      renamed.map(({ u, base }) => ({ base, ownerId: u.e.id })),
    );
    renamed.forEach(({ u }, i) => {
      u.loc.public_slug = slugs[i]!;
    });
    // Every Location has an Address; one without (written by hand, say) gets its first one now.
    const homeless = updates.filter((u) => u.e.address_id === null);
    const { addresses: homeIds } = await takeIds(trx, 0, homeless.length);
    homeless.forEach((u, i) => {
      u.addr.id = homeIds[i]!;
      u.loc.address_id = homeIds[i]!;
    });
    await insertAddresses(
      trx,
      homeless.map((u) => u.addr),
    );
    await updateAddresses(
      trx,
      updates
        .filter((u) => u.addressChanged && u.e.address_id !== null)
        .map((u) => ({ ...u.addr, bump: u.loc.bump })),
    );
    await updateLocations(
      trx,
      updates.map((u) => u.loc),
      this.options.runId,
    );
    await recordSlugs(
      trx,
      'location',
      renamed.map(({ u }) => ({ slug: u.loc.public_slug, ownerId: u.e.id })),
    );
  }

  /** `--full` closes the Orgs' Locations the sheet did not name; then each Org's default is settled. */
  async finish(trx: Transaction<Database>): Promise<FinishOutcome> {
    const { runId, full } = this.options;
    await this.orgs(trx);
    const { rows } = await sql<{ org_id: number }>`
      select distinct split_part(key, ':', 1)::bigint as org_id from import_run_keys
      where run_id = ${runId}::bigint`.execute(trx);
    const orgIds = [...new Set([...rows.map((r) => r.org_id), ...(this.fallback ? [this.fallback.id] : [])])];
    const closedOrgs = full ? await closeMissing(trx, orgIds, runId) : [];
    const defaultOrgs = await settleDefaults(trx, orgIds, runId);
    await deleteRunKeys(trx, runId);
    return { closed: closedOrgs.length, changedOrgIds: [...new Set([...closedOrgs, ...defaultOrgs])] };
  }
}
