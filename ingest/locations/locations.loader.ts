import { createHash, hash } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../../shared/database.js';
import { slugify } from '../../shared/domains.js';
import { FeedFormatError } from '../../shared/errors.js';
import type { BatchOutcome, BatchRow, FinishOutcome, NormalizedRow, RowIssue } from '../feed-handler.js';
import type { NewIssue } from '../import-issues.repository.js';
import { deleteRunKeys, recordRunKeys } from '../import-run-keys.repository.js';
import { allocateSlugs, recordNewSlugs, recordSlugs } from '../public-domains.js';
import type { LocationColumns, LocationField } from './locations.headers.js';
import { locationKeyReader } from './locations.key.js';
import { type LocationRow, locationRowNormalizer, type OrgRef } from './locations.normalize.js';
import { type OrgInfo, OrgResolver, resolveOrgOption } from './locations.orgs.js';
import {
  type AddressContent,
  columnsToRead,
  contentHash,
  type EncodedLocation,
  encodeLocation,
  type LocationContent,
  mergeAddress,
  mergeLocation,
} from './locations.records.js';
import {
  type AddressWrite,
  closeMissing,
  deleteFirstRows,
  type ExistingLocation,
  findLocationStates,
  insertAddresses,
  insertLocations,
  type LocationState,
  type LocationWrite,
  moveLocations,
  readLocations,
  recordFirstRows,
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
 * A row merged into the canonical Location and Address and hashed: what is compared with the stored
 * Location and written. Merged ahead (in the read-ahead, while Postgres is busy with the previous
 * batch) when the sheet has every column, since the stored values then play no part in the merge.
 */
export interface MergedRow {
  content: LocationContent;
  encoded: EncodedLocation;
  hash: string;
  address: AddressContent;
  addrHash: string;
}

/**
 * What the read-ahead hands over (LocationsLoader.prepareRow):
 * - `row`: normalized, and merged too when that does not need the stored Location;
 * - `keyed`: only the cells that name the Location were read (see `eager`); the rest is normalized
 *   in the batch, and only if the row's fingerprint does not match the stored Location's;
 * - `refused`: refused for its content (bad hours, no name) but still naming its Location, so the
 *   loader records its key and a `--full` run does not close a Location for a typo in this sheet.
 *
 * `fingerprint`: a hash of the row's text, its sheet header and FINGERPRINT_VERSION. A stored
 * Location with the same fingerprint was written from (or found unchanged by) this very row, so it is
 * unchanged without merging and hashing it again: that is most of the work of a re-import. A row
 * that has warnings keeps none (null), so it is normalized again and its warnings come again.
 */
export type LocationRecord =
  | { kind: 'row'; row: LocationRow; fingerprint: string | null; merged: MergedRow | null }
  | { kind: 'keyed'; fields: readonly string[]; code: string; org: OrgRef; fingerprint: string }
  | { kind: 'refused'; issue: RowIssue; code: string; org: OrgRef };

export interface LocationsRunOptions {
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

/** A row that names a Location of a known Org, on its way through loadBatch. */
interface Pending {
  line: number;
  raw: string;
  org: OrgInfo;
  key: string;
  code: string;
  record: Extract<LocationRecord, { kind: 'row' | 'keyed' }>;
}

/** A Pending whose row has been normalized. */
interface Loaded extends Pending {
  record: Extract<LocationRecord, { kind: 'row' }>;
}

const keyOf = (orgId: number, code: string) => `${orgId}:${code}`;
/** How a row names its Org, whatever stage it is at. */
const refOf = (x: LocationRecord): OrgRef => (x.kind === 'row' ? x.row.org : x.org);
const isOwnSlug = (slug: string, base: string) =>
  slug === base || (slug.startsWith(`${base}-`) && /^\d+$/.test(slug.slice(base.length + 1)));

/** Public Location domain label: the Org's informal name (or name) and the Location's city (or name). */
const slugBase = (org: OrgInfo, city: string | null, name: string) =>
  slugify(`${org.informal_name ?? org.name} ${city ?? name}`, 'location');

type RowRef = { line: number; raw: string };

/** The refused rows and warnings of one batch, stored by run-import with the batch. */
class BatchIssues {
  readonly list: NewIssue[] = [];
  refuse(r: RowRef, issue: RowIssue): void {
    this.list.push({ severity: 'rejected', line: r.line, raw: r.raw, ...issue });
  }
  warn(r: RowRef, warnings: readonly RowIssue[]): void {
    for (const w of warnings) this.list.push({ severity: 'warning', line: r.line, raw: r.raw, ...w });
  }
}

export class LocationsLoader {
  private fallback: OrgInfo | undefined;
  private readonly read: ReturnType<typeof columnsToRead>;
  /** The sheet has every column the merge could take from the stored Location (see MergedRow). */
  private readonly fullSheet: boolean;
  private readonly fingerprintSeed: string;
  private readonly normalizeRow: ReturnType<typeof locationRowNormalizer>;
  private readonly readKey: ReturnType<typeof locationKeyReader>;
  /**
   * Whether the read-ahead normalizes (and merges) every row, or reads only its key. It follows the
   * last batch: while most rows are written (a first import) the work is done ahead, in parallel with
   * Postgres; once most rows turn out unchanged (a re-import), it is not done at all for them.
   */
  private eager = true;

  constructor(
    private readonly columns: LocationColumns,
    private readonly options: LocationsRunOptions,
  ) {
    this.read = columnsToRead(columns);
    this.fullSheet = this.read.location.length === 0 && this.read.address.length === 0;
    this.fingerprintSeed = createHash('md5')
      .update(`${FINGERPRINT_VERSION}\0${options.header.join('\0')}`)
      .digest('base64url');
    this.normalizeRow = locationRowNormalizer(columns);
    this.readKey = locationKeyReader(columns);
  }

  private fingerprintOf(raw: string): string {
    return hash('md5', this.fingerprintSeed + raw, 'base64url');
  }

  /** The read-ahead's part (pure, no database): see LocationRecord. */
  prepareRow(fields: readonly string[], raw: string): NormalizedRow<LocationRecord> {
    const fingerprint = this.fingerprintOf(raw);
    if (!this.eager) {
      const key = this.readKey(fields);
      if (key) return { ok: true, record: { kind: 'keyed', fields, fingerprint, ...key }, warnings: [] };
    }
    return this.normalize(fields, fingerprint, this.eager && this.fullSheet);
  }

  private normalize(
    fields: readonly string[],
    fingerprint: string,
    mergeAhead: boolean,
  ): NormalizedRow<LocationRecord> {
    const result = this.normalizeRow(fields);
    if (result.ok) {
      const { row, warnings } = result;
      const clean = warnings.length === 0;
      const merged = mergeAhead ? this.merge(row, undefined) : null;
      return {
        ok: true,
        record: { kind: 'row', row, fingerprint: clean ? fingerprint : null, merged },
        warnings,
      };
    }
    if (result.key) {
      const { code, org } = result.key;
      return { ok: true, record: { kind: 'refused', issue: result.issue, code, org }, warnings: [] };
    }
    return { ok: false, reject: result.issue, warnings: [] };
  }

  private merge(row: LocationRow, e: ExistingLocation | undefined): MergedRow {
    const content = mergeLocation(row.location, e?.stored);
    const address = mergeAddress(row.address, e?.storedAddress);
    const { encoded, hash } = encodeLocation(content);
    return { content, encoded, hash, address, addrHash: contentHash(address) };
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

  /** A keyed row that its fingerprint cannot settle is normalized in the batch; it may turn out refused. */
  private normalizeKeyed(
    r: RowRef,
    record: Extract<LocationRecord, { kind: 'keyed' }>,
    issues: BatchIssues,
  ): Extract<LocationRecord, { kind: 'row' | 'refused' }> | null {
    const result = this.normalize(record.fields, record.fingerprint, false);
    if (!result.ok) {
      issues.refuse(r, result.reject);
      return null;
    }
    issues.warn(r, result.warnings);
    return result.record as Extract<LocationRecord, { kind: 'row' | 'refused' }>;
  }

  /**
   * Which Org each row names: the rows that name a Location of a known Org, and the keys of refused
   * rows (recorded so `--full` does not close their Locations). Only rows that will load may create a
   * by-name Org, so a refused row never leaves an empty Org behind: a keyed row whose Org is missing
   * is normalized first.
   */
  private async candidatesOf(
    trx: Transaction<Database>,
    rows: readonly BatchRow<LocationRecord>[],
    issues: BatchIssues,
  ): Promise<{ candidates: Pending[]; refusedKeys: string[] }> {
    const resolver = await this.orgs(trx);
    const records: (LocationRecord | null)[] = rows.map((r) => r.record);
    const found = await resolver.resolve(
      trx,
      rows.map((r) => refOf(r.record)),
      rows.map((r) => r.record.kind === 'row'),
    );
    const retry: number[] = [];
    rows.forEach((r, i) => {
      if (r.record.kind !== 'keyed' || found[i]!.ok) return;
      const normalized = this.normalizeKeyed(r, r.record, issues);
      records[i] = normalized;
      if (normalized?.kind === 'row') retry.push(i);
    });
    if (retry.length > 0) {
      const again = await resolver.resolve(
        trx,
        retry.map((i) => refOf(records[i]!)),
        retry.map(() => true),
      );
      retry.forEach((i, k) => {
        found[i] = again[k]!;
      });
    }

    const candidates: Pending[] = [];
    const refusedKeys: string[] = [];
    rows.forEach((r, i) => {
      const x = records[i];
      const lookup = found[i]!;
      if (x === null || x === undefined) return; // refused while normalizing, its issue is stored
      if (x.kind === 'refused') {
        issues.refuse(r, x.issue);
        if (lookup.ok) refusedKeys.push(keyOf(lookup.org.id, x.code));
        return;
      }
      if (!lookup.ok) {
        issues.refuse(r, { column: this.label(lookup.field), reason: lookup.reason });
        return;
      }
      const code = x.kind === 'row' ? x.row.location.code : x.code;
      const key = keyOf(lookup.org.id, code);
      candidates.push({ line: r.line, raw: r.raw, org: lookup.org, key, code, record: x });
    });
    return { candidates, refusedKeys };
  }

  /**
   * One batch, inside the transaction that also moves the run's checkpoint:
   * 1. which Org each row names (candidatesOf);
   * 2. the stored state of each (Org, store code), after moving by-name Locations to the Org a row
   *    now names (adoptNamedLocations);
   * 3. keyed rows that their fingerprint does not settle are normalized; of duplicate keys the later
   *    row wins;
   * 4. the keys are recorded for the run (repeats across batches, `--full`), and rows settled by
   *    their fingerprint are counted unchanged;
   * 5. the other rows are merged (unless merged ahead), compared by hash, and written.
   */
  async loadBatch(
    trx: Transaction<Database>,
    rows: readonly BatchRow<LocationRecord>[],
    runId: number,
  ): Promise<BatchOutcome> {
    const issues = new BatchIssues();
    const { candidates, refusedKeys } = await this.candidatesOf(trx, rows, issues);

    const keysOf = (ps: readonly Pending[]) => [
      ...new Map(ps.map((p) => [p.key, { orgId: p.org.id, code: p.code }])).values(),
    ];
    let states = await findLocationStates(trx, keysOf(candidates));
    const moved = await this.adoptNamedLocations(trx, candidates, states, runId);
    const movedFrom = [...new Set(moved.values())];
    if (moved.size > 0) states = await findLocationStates(trx, keysOf(candidates));
    const stateByKey = new Map(states.map((e) => [keyOf(e.org_id, e.code), e]));
    /** The stored Location came from this very row text, and is open: unchanged, nothing to merge. */
    const settled = (p: Pending) => {
      const e = stateByKey.get(p.key);
      return (
        e !== undefined &&
        e.closed_date === null &&
        p.record.fingerprint === e.source_fingerprint &&
        !moved.has(e.id)
      );
    };

    // Keyed rows that their fingerprint does not settle are normalized now. Then duplicate keys inside
    // the batch: the later row wins (as for the register).
    const last = new Map<string, Pending>();
    let duplicates = 0;
    for (const p of candidates) {
      if (p.record.kind === 'keyed' && !settled(p)) {
        const normalized = this.normalizeKeyed(p, p.record, issues);
        if (normalized === null) continue;
        if (normalized.kind === 'refused') {
          issues.refuse(p, normalized.issue);
          refusedKeys.push(p.key);
          continue;
        }
        p.record = normalized;
      }
      if (last.delete(p.key)) duplicates++;
      last.set(p.key, p);
    }
    const unique = [...last.values()];
    if (this.options.full) {
      await recordFirstRows(
        trx,
        runId,
        unique.map((p) => ({ orgId: p.org.id, code: p.code, line: p.line })),
      );
    }
    const seenBefore = await recordRunKeys(trx, runId, [...unique.map((p) => p.key), ...refusedKeys]);

    const repeats = new Set<Pending>();
    const toMerge: Loaded[] = [];
    let unchanged = 0;
    for (const p of unique) {
      const repeat = seenBefore.has(p.key);
      if (repeat) {
        duplicates++;
        repeats.add(p);
      }
      if (p.record.fingerprint !== null && settled(p)) {
        if (!repeat) unchanged++;
      } else toMerge.push(p as Loaded);
    }
    this.eager = toMerge.length * 2 > unique.length;
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
      const { fingerprint } = p.record;
      const { content, encoded, hash, address, addrHash } = p.record.merged ?? this.merge(p.record.row, e);
      const addressChanged = e === undefined || e.address_id === null || e.address_hash !== addrHash;
      // (A Location moved to this row's Org above is written even if its content is the same.)
      if (e && e.content_hash === hash && !addressChanged && e.closed_date === null && !moved.has(e.id)) {
        if (!repeat) unchanged++;
        if (fingerprint !== null && e.source_fingerprint !== fingerprint) {
          refreshed.push({ id: e.id, fingerprint });
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
          code: p.code,
          domain_cc: cc,
          public_slug: e?.public_slug ?? '',
          address_id: e?.address_id ?? 0,
          position: p.line,
          content,
          encoded,
          hash,
          fingerprint,
          // A Location the run already wrote (a repeated key) is not bumped a second time.
          bump: e === undefined || e.last_run_id !== runId,
        },
      };
      if (e) updates.push({ ...write, e, addressChanged });
      else inserts.push(write);
    }
    await this.writeInserts(trx, inserts, runId);
    await this.writeUpdates(trx, updates, runId);
    await storeFingerprints(trx, refreshed);

    // The Orgs that gave up a Location get their default settled again.
    await settleDefaults(trx, movedFrom, runId);
    const changedOrgIds = [...new Set([...inserts, ...updates].map((x) => x.p.org.id).concat(movedFrom))];
    const counted = (xs: { p: Pending }[]) => xs.filter((x) => !seenBefore.has(x.p.key)).length;
    return {
      inserted: counted(inserts),
      updated: counted(updates),
      unchanged,
      duplicates,
      changedOrgIds,
      issues: issues.list,
    };
  }

  /**
   * A row that names its Org by domain, company number or `--org`, for a store code that Org does
   * not have yet, while the non-registered Org of the row's business name has an open Location with
   * that code: the sheet used to be imported without naming its Org. That Location moves to the
   * named Org (keeping its id and stable domain) instead of a second one being created. Returns the
   * moved Locations' ids, each with the Org it left.
   */
  private async adoptNamedLocations(
    trx: Transaction<Database>,
    candidates: readonly Pending[],
    states: readonly LocationState[],
    runId: number,
  ): Promise<Map<number, number>> {
    const moved = new Map<number, number>();
    const known = new Set(states.map((e) => keyOf(e.org_id, e.code)));
    // Only a row whose Org was named (not found by its business name) can have a by-name Org apart.
    const named = (p: Pending) => {
      const ref = refOf(p.record);
      return ref.orgDomain !== undefined || ref.companyNumber !== undefined || this.fallback !== undefined;
    };
    const homeless = candidates.filter(
      (p) => !known.has(p.key) && named(p) && refOf(p.record).businessName !== '',
    );
    if (homeless.length === 0) return moved;
    const byName = await (await this.orgs(trx)).byNameOnly(
      trx,
      homeless.map((p) => refOf(p.record)),
    );
    const from = homeless.flatMap((p, i) => {
      const org = byName[i];
      return org && org.id !== p.org.id ? [{ p, orgId: org.id }] : [];
    });
    if (from.length === 0) return moved;
    const old = await findLocationStates(
      trx,
      from.map(({ p, orgId }) => ({ orgId, code: p.code })),
    );
    const target = new Map(from.map(({ p, orgId }) => [keyOf(orgId, p.code), p.org.id]));
    const moves: { id: number; orgId: number }[] = [];
    for (const e of old) {
      const to = target.get(keyOf(e.org_id, e.code));
      if (to === undefined || e.closed_date !== null || moved.has(e.id)) continue;
      moves.push({ id: e.id, orgId: to });
      moved.set(e.id, e.org_id);
    }
    await moveLocations(trx, moves, runId);
    return moved;
  }

  private async writeInserts(trx: Transaction<Database>, inserts: Write[], runId: number): Promise<void> {
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
      runId,
    );
    await recordNewSlugs(
      trx,
      'location',
      inserts.map((x) => ({ slug: x.loc.public_slug, ownerId: x.loc.id })),
    );
  }

  private async writeUpdates(trx: Transaction<Database>, updates: Update[], runId: number): Promise<void> {
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
      runId,
    );
    await recordSlugs(
      trx,
      'location',
      renamed.map(({ u }) => ({ slug: u.loc.public_slug, ownerId: u.e.id })),
    );
  }

  /**
   * `--full` closes the Orgs' Locations the sheet did not name; then each Org's default is settled
   * (settleDefaults: a `--full` sheet's first row of each Org, else the default stays while open).
   */
  async finish(trx: Transaction<Database>, runId: number): Promise<FinishOutcome> {
    const { full } = this.options;
    await this.orgs(trx);
    const { rows } = await sql<{ org_id: number }>`
      select distinct split_part(key, ':', 1)::bigint as org_id from import_run_keys
      where run_id = ${runId}::bigint`.execute(trx);
    const orgIds = [...new Set([...rows.map((r) => r.org_id), ...(this.fallback ? [this.fallback.id] : [])])];
    const closedOrgs = full ? await closeMissing(trx, orgIds, runId) : [];
    const defaultOrgs = await settleDefaults(trx, orgIds, runId);
    await deleteFirstRows(trx, runId);
    await deleteRunKeys(trx, runId);
    return { closed: closedOrgs.length, changedOrgIds: [...new Set([...closedOrgs, ...defaultOrgs])] };
  }
}
