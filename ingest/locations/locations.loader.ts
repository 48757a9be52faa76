import type { Transaction } from 'kysely';
import type { Database } from '../../shared/database.js';
import { FeedFormatError } from '../../shared/errors.js';
import type { BatchOutcome, BatchRow, FinishOutcome, NormalizedRow } from '../feed-handler.js';
import { recordRunKeys } from '../import-run-keys.repository.js';
import { findAdoptions } from './locations.adopt.js';
import { finishRun, recordFirstRows, settleDefaults } from './locations.close.js';
import type { LocationColumns, LocationField } from './locations.headers.js';
import { locationKeyReader, rowFingerprinter } from './locations.key.js';
import {
  BatchIssues,
  candidatesFrom,
  createdByRun,
  findLocationStates,
  findStatesAndRunKeys,
  isSettled,
  keyOf,
  keysOf,
  type LocationRecord,
  type LocationState,
  lastRowWins,
  type Pending,
  type RowRef,
  readLocations,
  refOf,
  splitSettled,
} from './locations.match.js';
import { locationRowNormalizer } from './locations.normalize.js';
import { type OrgInfo, OrgResolver, resolveOrgOption } from './locations.orgs.js';
import { columnsToRead } from './locations.records.js';
import { moveLocations, storeFingerprints } from './locations.repository.js';
import {
  mergeAhead as mergeAheadOf,
  mergeRow,
  planWrites,
  writeInserts,
  writeUpdates,
} from './locations.write.js';

export type { LocationRecord, MergedAhead, MergedRow } from './locations.match.js';

/**
 * The one place that writes Locations. Per batch: resolve the Orgs the rows name, match them to the
 * Locations that exist for those (Org, store code) keys (locations.match.ts), merge and hash in
 * memory, then one statement per kind of write (locations.write.ts); at the end of the run, close
 * what a `--full` sheet left out and settle defaults (locations.close.ts).
 */

export interface LocationsRunOptions {
  full: boolean;
  org: string | undefined;
  domainSuffix: string;
  registrationCountry: string;
  /** The sheet's header cells: part of every row fingerprint (the same cells mean other things under another header). */
  header: readonly string[];
}

export class LocationsLoader {
  private fallback: OrgInfo | undefined;
  private readonly read: ReturnType<typeof columnsToRead>;
  /** The sheet has every column the merge could take from the stored Location (see MergedAhead). */
  private readonly fullSheet: boolean;
  private readonly fingerprintOf: (raw: string) => string;
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
    this.fingerprintOf = rowFingerprinter(options.header);
    this.normalizeRow = locationRowNormalizer(columns);
    this.readKey = locationKeyReader(columns);
  }

  /** The read-ahead's part (pure, no database): see LocationRecord. */
  prepareRow(fields: readonly string[], raw: string): NormalizedRow<LocationRecord> {
    const fingerprint = this.fingerprintOf(raw);
    if (!this.eager) {
      const key = this.readKey(fields);
      if (key) return { ok: true, record: { kind: 'keyed', fields, fingerprint, ...key }, warnings: [] };
    }
    return this.normalize(fields, fingerprint, this.eager);
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
      const kept = clean ? fingerprint : null;
      const merged = mergeAhead ? mergeAheadOf(row, kept) : null;
      return {
        ok: true,
        record: { kind: 'row', row, fingerprint: kept, merged },
        warnings,
      };
    }
    if (result.key) {
      const { code, org } = result.key;
      return { ok: true, record: { kind: 'refused', issue: result.issue, code, org }, warnings: [] };
    }
    return { ok: false, reject: result.issue, warnings: [] };
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

    return candidatesFrom(rows, records, found, issues, (field) => this.label(field));
  }

  /**
   * One batch, inside the transaction that also moves the run's checkpoint:
   * 1. which Org each row names (candidatesOf);
   * 2. the stored state of each (Org, store code), after moving by-name Locations to the Org a row
   *    now names (adopt);
   * 3. keyed rows that their fingerprint does not settle are normalized; of duplicate keys the later
   *    row wins;
   * 4. the keys are recorded for the run (repeats across batches, `--full`; see recordKeys), and rows
   *    settled by their fingerprint are counted unchanged;
   * 5. the other rows are merged (unless merged ahead), compared by hash, and written.
   */
  async loadBatch(
    trx: Transaction<Database>,
    rows: readonly BatchRow<LocationRecord>[],
    runId: number,
  ): Promise<BatchOutcome> {
    const issues = new BatchIssues();
    const { candidates, refusedKeys } = await this.candidatesOf(trx, rows, issues);

    const found = await findStatesAndRunKeys(trx, keysOf(candidates), runId);
    let states = found.states;
    // Keys of Locations the run created in an earlier batch, as they were before this batch moved any.
    const created = new Set(states.flatMap((e) => (createdByRun(e, runId) ? [keyOf(e.org_id, e.code)] : [])));
    const { moved, left } = await this.adopt(trx, candidates, states, runId);
    const movedFrom = [...new Set(moved.values())];
    if (moved.size > 0) states = await findLocationStates(trx, keysOf(candidates));
    const stateByKey = new Map(states.map((e) => [keyOf(e.org_id, e.code), e]));
    const settled = (p: Pending) => isSettled(p, stateByKey.get(p.key), moved);

    const normalized = this.normalizeUnsettled(candidates, settled, issues, refusedKeys);
    const { unique, duplicates: inBatch } = lastRowWins(normalized);
    if (this.options.full) {
      await recordFirstRows(
        trx,
        runId,
        unique.map((p) => ({ orgId: p.org.id, code: p.code, line: p.line })),
      );
    }
    const seenBefore = await this.recordKeys(trx, runId, {
      unique,
      refusedKeys,
      stateByKey,
      created,
      left,
      recorded: found.recorded,
    });
    const split = splitSettled(unique, seenBefore, settled);
    this.eager = split.toMerge.length * 2 > unique.length;

    const existing = await readLocations(
      trx,
      split.toMerge.flatMap((p) => stateByKey.get(p.key) ?? []),
      this.read,
    );
    const byKey = new Map(existing.map((e) => [keyOf(e.org_id, e.code), e]));
    // A row merged ahead was merged with no stored Location: right for a new one, and for any row of
    // a sheet with every column (the stored values play no part then); the others merge again here.
    if (!this.fullSheet) for (const p of split.toMerge) if (byKey.has(p.key)) p.record.merged = null;
    const plan = planWrites(split.toMerge, byKey, moved, split.repeats, runId, (p, e) =>
      mergeRow(p.record.row, e),
    );
    await writeInserts(trx, plan.inserts, runId);
    await writeUpdates(trx, plan.updates, runId);
    await storeFingerprints(trx, plan.refreshed);

    // The Orgs that gave up a Location get their default settled again.
    await settleDefaults(trx, movedFrom, runId);
    const written = [...plan.inserts, ...plan.updates];
    const changedOrgIds = [...new Set(written.map((x) => x.p.org.id).concat(movedFrom))];
    const counted = (xs: { p: Pending }[]) => xs.filter((x) => !seenBefore.has(x.p.key)).length;
    return {
      inserted: counted(plan.inserts),
      updated: counted(plan.updates),
      unchanged: split.unchanged + plan.unchanged,
      duplicates: inBatch + split.duplicates,
      changedOrgIds,
      issues: issues.list,
    };
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
  private async recordKeys(
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

  /**
   * Keyed rows that their fingerprint does not settle are normalized now; those refused on the way
   * are left out (their keys recorded, so `--full` does not close their Locations).
   */
  private normalizeUnsettled(
    candidates: readonly Pending[],
    settled: (p: Pending) => boolean,
    issues: BatchIssues,
    refusedKeys: string[],
  ): Pending[] {
    const out: Pending[] = [];
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
      out.push(p);
    }
    return out;
  }

  /** Moves by-name Locations to the Org their row now names (see findAdoptions): id -> Org left, and their states before. */
  private async adopt(
    trx: Transaction<Database>,
    candidates: readonly Pending[],
    states: Awaited<ReturnType<typeof findLocationStates>>,
    runId: number,
  ): Promise<{ moved: Map<number, number>; left: LocationState[] }> {
    const resolver = await this.orgs(trx);
    const { moves, moved, left } = await findAdoptions(
      trx,
      resolver,
      candidates,
      states,
      this.fallback !== undefined,
    );
    await moveLocations(trx, moves, runId);
    return { moved, left };
  }

  /**
   * `--full` closes the Orgs' Locations the sheet did not name; then each Org's default is settled
   * (settleDefaults: a `--full` sheet's first row of each Org, else the default stays while open).
   */
  async finish(trx: Transaction<Database>, runId: number): Promise<FinishOutcome> {
    await this.orgs(trx);
    return finishRun(trx, runId, { full: this.options.full, fallbackOrgId: this.fallback?.id });
  }
}
