import { sql, type Transaction } from 'kysely';
import type { Database } from '../../shared/tables.js';
import type { BatchRow, RowIssue } from '../feed-handler.js';
import type { NewIssue } from '../import-runs/import-issues.repository.js';
import { recordRunKeys } from '../import-runs/import-run-keys.repository.js';
import type { LocationField } from './locations.headers.js';
import type { LocationRow, OrgRef } from './locations.normalize.js';
import type { OrgInfo, OrgLookup } from './locations.orgs.js';
import type {
  AddressContent,
  EncodedLocation,
  LocationContent,
  StoredAddress,
  StoredLocation,
} from './locations.records.js';
import type { NewLocationCopy } from './locations.repository.js';

/**
 * Matching sheet rows to the Locations that exist: the stored state of each (Org, store code) key,
 * which rows their fingerprint settles as unchanged, which row wins a repeated key, and which
 * by-name Locations move to the Org a row now names. Reads only; the writes are in locations.write.ts.
 */

type Trx = Transaction<Database>;

/**
 * A row merged into the canonical Location and Address and hashed: what is compared with the stored
 * Location and written (merged in the batch, see MergedAhead for the read-ahead's).
 */
export interface MergedRow {
  content: LocationContent;
  encoded: EncodedLocation;
  hash: string;
  address: AddressContent;
  addrHash: string;
}

/**
 * A row merged ahead (in the read-ahead, while Postgres is busy with the previous batch) with no
 * stored Location, while most rows are written: that is the merge of a new Location, and of any row
 * of a sheet with every column (the stored values then play no part); a row of a partial sheet whose
 * Location exists is merged again with it in the batch. Only what a new Location needs is kept: its
 * hashes, its COPY text and its label's parts; the merged objects themselves are dropped at once, so
 * a batch waiting for its turn holds a few strings a row instead of a few dozen objects (they would
 * outlive the young generation and be collected as old ones). A row that turns out to update a
 * stored Location is merged again in the batch (mergeRow).
 */
export interface MergedAhead {
  hash: string;
  addrHash: string;
  /** The COPY text of the columns that do not depend on ids, slugs or the run (newLocationCopy). */
  copy: NewLocationCopy;
  name: string;
  city: string | null;
  countryCode: string;
  /**
   * The public label's base (slugBase in locations.write.ts) as it is if the row's Org is named
   * `orgName` (its business name: what a by-name Org is called). The batch uses it when the Org it
   * resolved has that name, and slugifies again otherwise.
   */
  slugGuess: { orgName: string; base: string };
}

/**
 * What the read-ahead hands over (LocationRows.prepare, locations.rows.ts):
 * - `row`: normalized, and merged ahead too (see MergedAhead) while most rows are written;
 * - `keyed`: only the cells that name the Location were read (see the loader's `eager`); the rest
 *   is normalized in the batch, and only if the row's fingerprint does not match the stored Location's;
 * - `refused`: refused for its content (bad hours, no name) but still naming its Location, so the
 *   loader records its key and a `--full` run does not close a Location for a typo in this sheet.
 *
 * `fingerprint`: a hash of the row's text, its sheet header and FINGERPRINT_VERSION. A stored
 * Location with the same fingerprint was written from (or found unchanged by) this very row, so it is
 * unchanged without merging and hashing it again: that is most of the work of a re-import. A row
 * that has warnings keeps none (null), so it is normalized again and its warnings come again.
 */
export type LocationRecord =
  | { kind: 'row'; row: LocationRow; fingerprint: string | null; merged: MergedAhead | null }
  | { kind: 'keyed'; fields: readonly string[]; code: string; org: OrgRef; fingerprint: string }
  | { kind: 'refused'; issue: RowIssue; code: string; org: OrgRef };

/** A row that names a Location of a known Org, on its way through a batch. */
export interface Pending {
  line: number;
  raw: string;
  org: OrgInfo;
  key: string;
  code: string;
  record: Extract<LocationRecord, { kind: 'row' | 'keyed' }>;
}

/** A Pending whose row has been normalized. */
export interface Loaded extends Pending {
  record: Extract<LocationRecord, { kind: 'row' }>;
}

export const keyOf = (orgId: number, code: string) => `${orgId}:${code}`;

/** How a row names its Org, whatever stage it is at. */
export const refOf = (x: LocationRecord): OrgRef => (x.kind === 'row' ? x.row.org : x.org);

export type RowRef = { line: number; raw: string };

/** The refused rows and warnings of one batch, stored by ingest/run/read-source.ts with the batch. */
export class BatchIssues {
  readonly list: NewIssue[] = [];
  refuse(r: RowRef, issue: RowIssue): void {
    this.list.push({ severity: 'rejected', line: r.line, raw: r.raw, ...issue });
  }
  warn(r: RowRef, warnings: readonly RowIssue[]): void {
    for (const w of warnings) this.list.push({ severity: 'warning', line: r.line, raw: r.raw, ...w });
  }
}

/**
 * Sorts a batch's rows by the Org lookup of each: a row naming a known Org is a candidate; a refused
 * row or an unknown Org is an issue; a refused row of a known Org still records its key (so `--full`
 * does not close its Location). `records[i]` is null for a row refused while normalizing (its issue
 * is already stored).
 */
export function candidatesFrom(
  rows: readonly BatchRow<LocationRecord>[],
  records: readonly (LocationRecord | null)[],
  found: readonly OrgLookup[],
  issues: BatchIssues,
  label: (field: LocationField) => string,
): { candidates: Pending[]; refusedKeys: string[] } {
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
      issues.refuse(r, { column: lookup.field === null ? null : label(lookup.field), reason: lookup.reason });
      return;
    }
    const code = x.kind === 'row' ? x.row.location.code : x.code;
    const key = keyOf(lookup.org.id, code);
    candidates.push({ line: r.line, raw: r.raw, org: lookup.org, key, code, record: x });
  });
  return { candidates, refusedKeys };
}

/** What a sheet row first needs of its stored Location: enough to see that it is unchanged. */
export interface LocationState {
  id: number;
  org_id: number;
  code: string;
  source_fingerprint: string | null;
  closed_date: string | null;
  last_run_id: number | null;
  version_number: number;
}

/**
 * A Location this run created (in an earlier batch): the run met its key, though the key was not
 * recorded (see LocationsLoader.loadBatch). Every other write that stamps a Location with the run
 * bumps its version from 1, so version 1 and the run's id mean exactly that (createdByRun in
 * locations.close.ts says the same in SQL).
 */
export const createdByRun = (e: LocationState, runId: number) =>
  e.last_run_id === runId && e.version_number === 1;

/** A stored Location about to be merged with a sheet row (see readLocations). */
export interface ExistingLocation extends LocationState {
  domain_cc: string;
  content_hash: string;
  public_slug: string;
  address_id: number | null;
  address_hash: string | null;
  stored: StoredLocation;
  storedAddress: StoredAddress;
}

/** The distinct (Org, store code) keys of some rows, for findLocationStates. */
export const keysOf = (ps: readonly Pending[]) => [
  ...new Map(ps.map((p) => [p.key, { orgId: p.org.id, code: p.code }])).values(),
];

/**
 * The stored Locations for (org, code) keys, slim: in a re-import most rows match their
 * fingerprint and need nothing more, and every column read back costs parsing in the client.
 */
export async function findLocationStates(
  trx: Trx,
  keys: { orgId: number; code: string }[],
): Promise<LocationState[]> {
  if (keys.length === 0) return [];
  const { rows } = await sql<LocationState>`
    select l.id, l.org_id, l.code, l.source_fingerprint, l.closed_date, l.last_run_id, l.version_number
    from unnest(${keys.map((k) => k.orgId)}::bigint[], ${keys.map((k) => k.code)}::text[]) as k(org_id, code)
    join locations l on l.org_id = k.org_id and l.code = k.code`.execute(trx);
  return rows;
}

/**
 * findLocationStates, and in the same statement (one round trip a batch less) which of the keys that
 * have no Location the run has recorded (import_run_keys: an earlier batch met them, e.g. refused).
 * Only keys with no Location are looked up there, so a re-import (every key stored) reads no key rows.
 */
export async function findStatesAndRunKeys(
  trx: Trx,
  keys: { orgId: number; code: string }[],
  runId: number,
): Promise<{ states: LocationState[]; recorded: Set<string> }> {
  if (keys.length === 0) return { states: [], recorded: new Set() };
  const { rows } = await sql<LocationState & { run_key: string | null }>`
    with k as materialized (
      select k.org_id, k.code, l.id, l.source_fingerprint, l.closed_date, l.last_run_id, l.version_number
      from unnest(${keys.map((k) => k.orgId)}::bigint[], ${keys.map((k) => k.code)}::text[]) as k(org_id, code)
      left join locations l on l.org_id = k.org_id and l.code = k.code)
    select id, org_id, code, source_fingerprint, closed_date, last_run_id, version_number, null::text as run_key
    from k where id is not null
    union all
    select null, null, null, null, null, null, null, r.key
    from import_run_keys r
    where r.run_id = ${runId}::bigint
      and r.key = any(array(select k.org_id::text || ':' || k.code from k where k.id is null))`.execute(trx);
  const states: LocationState[] = [];
  const recorded = new Set<string>();
  for (const { run_key, ...state } of rows) {
    if (run_key !== null) recorded.add(run_key);
    else states.push(state);
  }
  return { states, recorded };
}

/** The rest of those Locations that rows must be merged with, including the stored columns a partial sheet leaves. */
export async function readLocations(
  trx: Trx,
  states: readonly LocationState[],
  read: { location: readonly (keyof StoredLocation)[]; address: readonly (keyof StoredAddress)[] },
): Promise<ExistingLocation[]> {
  if (states.length === 0) return [];
  const extra = [
    ...read.location.map((c) => sql`l.${sql.ref(c)} as ${sql.ref(`l_${c}`)}`),
    ...read.address.map((c) => sql`a.${sql.ref(c)} as ${sql.ref(`a_${c}`)}`),
  ];
  const { rows } = await sql<Record<string, unknown>>`
    select l.id, l.domain_cc, l.content_hash, l.public_slug, l.address_id,
      a.content_hash as address_hash ${extra.length > 0 ? sql`, ${sql.join(extra)}` : sql``}
    from locations l left join addresses a on a.id = l.address_id
    where l.id = any(${states.map((s) => s.id)}::bigint[])`.execute(trx);
  const stateById = new Map(states.map((s) => [s.id, s]));
  return rows.map((r) => {
    const stored: Record<string, unknown> = {};
    for (const c of read.location) stored[c] = r[`l_${c}`];
    const storedAddress: Record<string, unknown> = {};
    for (const c of read.address) storedAddress[c] = r[`a_${c}`];
    return {
      ...stateById.get(r.id as number)!,
      domain_cc: r.domain_cc as string,
      content_hash: r.content_hash as string,
      public_slug: r.public_slug as string,
      address_id: r.address_id as number | null,
      address_hash: r.address_hash as string | null,
      stored: stored as StoredLocation,
      storedAddress: storedAddress as StoredAddress,
    };
  });
}

/**
 * The stored Location came from this very row text, and is open and was not moved by this batch:
 * unchanged, nothing to merge.
 */
export function isSettled(
  p: Pending,
  e: LocationState | undefined,
  moved: ReadonlyMap<number, number>,
): boolean {
  return (
    e !== undefined &&
    e.closed_date === null &&
    p.record.fingerprint === e.source_fingerprint &&
    !moved.has(e.id)
  );
}

/** Duplicate keys inside a batch: the later row wins (as for the register); each loser counts as a duplicate. */
export function lastRowWins<P extends { key: string }>(
  ps: readonly P[],
): { unique: P[]; duplicates: number } {
  const last = new Map<string, P>();
  let duplicates = 0;
  for (const p of ps) {
    if (last.delete(p.key)) duplicates++;
    last.set(p.key, p);
  }
  return { unique: [...last.values()], duplicates };
}

/**
 * The batch's unique rows sorted by what they still need: settled ones only count (as unchanged,
 * unless an earlier batch of the run already met their key: then they are repeats), the others go
 * on to be merged and compared. A repeated key counts as a duplicate either way.
 */
export function splitSettled(
  unique: readonly Pending[],
  seenBefore: ReadonlySet<string>,
  settled: (p: Pending) => boolean,
): { toMerge: Loaded[]; repeats: Set<Pending>; unchanged: number; duplicates: number } {
  const repeats = new Set<Pending>();
  const toMerge: Loaded[] = [];
  let unchanged = 0;
  let duplicates = 0;
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
  return { toMerge, repeats, unchanged, duplicates };
}

/**
 * Records the batch's keys for the run and returns those an earlier batch met (repeats). A row with
 * no stored Location records no key: the Location it creates carries the run's id and version 1
 * (createdByRun), which says the same and saves a key row per new Location, most of a first
 * import. Such keys are only looked up (an earlier batch may have refused them), before this batch
 * records its own: `recorded`, found with the batch's stored Locations (findStatesAndRunKeys), before
 * any move; a key with no Location after the moves had none before them either. A Location the run created that moves away leaves its old key recorded, so a
 * later row naming that key still counts as a repeat.
 */
export async function recordBatchKeys(
  trx: Transaction<Database>,
  runId: number,
  batch: {
    unique: readonly Pending[];
    refusedKeys: readonly string[];
    stateByKey: ReadonlyMap<string, LocationState>;
    created: ReadonlySet<string>;
    left: readonly LocationState[];
    recorded: ReadonlySet<string>;
  },
): Promise<Set<string>> {
  const seen = new Set<string>();
  const known: string[] = [];
  for (const p of batch.unique) {
    if (batch.stateByKey.has(p.key)) known.push(p.key);
    else if (batch.recorded.has(p.key)) seen.add(p.key);
  }
  const leftKeys = batch.left.flatMap((e) => (createdByRun(e, runId) ? [keyOf(e.org_id, e.code)] : []));
  const repeats = await recordRunKeys(trx, runId, [...known, ...batch.refusedKeys, ...leftKeys]);
  for (const key of repeats) seen.add(key);
  for (const key of batch.created) seen.add(key);
  return seen;
}
