import type { Transaction } from 'kysely';
import { FeedFormatError } from '../../shared/errors.js';
import type { Database } from '../../shared/tables.js';
import type { BatchOutcome, BatchRow, FinishOutcome, LoadContext, NormalizedRow } from '../feed-handler.js';
import { findAdoptions } from './locations.adopt.js';
import { finishRun, recordFirstRows, settleDefaults } from './locations.close.js';
import type { LocationColumns } from './locations.headers.js';
import { RunLabels } from './locations.labels.js';
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
  readLocations,
  recordBatchKeys,
  refOf,
  splitSettled,
} from './locations.match.js';
import { type OrgInfo, OrgResolver, resolveOrgOption } from './locations.orgs.js';
import { columnsToRead } from './locations.records.js';
import { moveLocations, storeFingerprints } from './locations.repository.js';
import { LocationRows } from './locations.rows.js';
import { BatchSteps } from './locations.steps.js';
import { assignKeys, mergeRow, planWrites, writeInserts, writeUpdates } from './locations.write.js';

export type { LocationRecord, MergedAhead, MergedRow } from './locations.match.js';

/**
 * The one place that writes Locations. Per batch: resolve the Orgs the rows name, match them to the
 * Locations that exist for those (Org, store code) keys (locations.match.ts), merge and hash in
 * memory, then one statement per kind of write (locations.write.ts); at the end of the run, close
 * what a `--full` sheet left out and settle defaults (locations.close.ts).
 */

export interface LocationsRunOptions {
  full: boolean;
  /** `--max-gone` of a `--full` sheet (full-guard.ts). */
  maxGonePercent?: number | undefined;
  org: string | undefined;
  domainSuffix: string;
  registrationCountry: string;
  /** The sheet's header cells: part of every row fingerprint (the same cells mean other things under another header). */
  header: readonly string[];
}

const written = (plan: { inserts: { p: Pending }[]; updates: { p: Pending }[] }) => [
  ...plan.inserts,
  ...plan.updates,
];

export class LocationsLoader {
  private fallback: OrgInfo | undefined;
  private readonly read: ReturnType<typeof columnsToRead>;
  /** The sheet has every column the merge could take from the stored Location (see MergedAhead). */
  private readonly fullSheet: boolean;
  private readonly rows: LocationRows;
  /** The run's Location labels (see RunLabels), and the steps of the last batch begun (see loadBatch). */
  private readonly labels = new RunLabels();
  private lastSteps: BatchSteps | undefined;
  /** `--full`: Orgs whose first row an earlier batch of this run recorded (recordFirstRows keeps the first). */
  private readonly firstRowOrgs = new Set<number>();

  constructor(
    columns: LocationColumns,
    private readonly options: LocationsRunOptions,
  ) {
    this.read = columnsToRead(columns);
    this.fullSheet = this.read.location.length === 0 && this.read.address.length === 0;
    this.rows = new LocationRows(columns, options.header);
  }

  /** The read-ahead's part (pure, no database): see LocationRecord. */
  prepareRow(fields: readonly string[], raw: string): NormalizedRow<LocationRecord> {
    return this.rows.prepare(fields, raw);
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

  /**
   * Which Org each row names: the rows that name a Location of a known Org, and the keys of refused
   * rows (recorded so `--full` does not close their Locations). Only rows that will load may create a
   * by-name Org, so a refused row never leaves an empty Org behind: a keyed row whose Org is missing
   * is normalized first. A sheet that creates no Locations (newGap) creates no Org either: a new Org
   * has no Location, so its row would be refused as new; it is refused for that reason at once.
   */
  private async candidatesOf(
    trx: Transaction<Database>,
    rows: readonly BatchRow<LocationRecord>[],
    issues: BatchIssues,
  ): Promise<{ candidates: Pending[]; refusedKeys: string[] }> {
    const resolver = await this.orgs(trx);
    const records: (LocationRecord | null)[] = rows.map((r) => r.record);
    const creates = this.rows.newGap === null;
    const found = await resolver.resolve(
      trx,
      rows.map((r) => refOf(r.record)),
      rows.map((r) => creates && r.record.kind === 'row'),
    );
    const retry: number[] = [];
    rows.forEach((r, i) => {
      if (r.record.kind !== 'keyed' || found[i]!.ok) return;
      const normalized = this.rows.normalizeKeyed(r, r.record, issues);
      records[i] = normalized;
      if (normalized?.kind === 'row' && creates) retry.push(i);
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

    if (this.rows.newGap !== null) {
      found.forEach((lookup, i) => {
        if (!lookup.ok && lookup.byName)
          found[i] = { ok: false, field: 'storeCode', reason: this.rows.newGap! };
      });
    }
    return candidatesFrom(rows, records, found, issues, (field) => this.rows.label(field));
  }

  /**
   * A sheet without a column a new Location needs (newGap) creates none: a row whose key has no
   * stored Location, once the batch's moves are done, is refused, and its key recorded as any refused
   * row's (a `--full` run counts its Org as named). The stored keys are known by then: no lookup more.
   */
  private refuseNew(
    candidates: readonly Pending[],
    stateByKey: ReadonlyMap<string, LocationState>,
    issues: BatchIssues,
    refusedKeys: string[],
  ): readonly Pending[] {
    const reason = this.rows.newGap;
    if (reason === null) return candidates;
    const column = this.rows.label('storeCode');
    return candidates.filter((p) => {
      if (stateByKey.has(p.key)) return true;
      issues.refuse(p, { column, reason });
      refusedKeys.push(p.key);
      return false;
    });
  }

  /**
   * One batch, inside the transaction that also moves the checkpoint:
   * 1. which Org each row names (candidatesOf);
   * 2. the stored state of each (Org, store code), after moving by-name Locations to the Org a row
   *    now names (adopt);
   * 3. a sheet that creates no Locations refuses rows whose key has none (refuseNew); keyed rows
   *    that their fingerprint does not settle are normalized; of duplicate keys the later row wins;
   * 4. the keys are recorded for the run (repeats across batches, `--full`; see recordKeys), and rows
   *    settled by their fingerprint are counted unchanged;
   * 5. the other rows are merged (unless merged ahead), compared by hash, and written.
   *
   * Two batches are in flight at once (locations.feed.ts), each in its own transaction: this one may
   * begin before the one before it has committed, and so cannot see its writes. It waits for that
   * batch (BatchSteps) before each step that could meet them; see BatchSteps for which and why no
   * wait can close a cycle.
   */
  async loadBatch(
    trx: Transaction<Database>,
    rows: readonly BatchRow<LocationRecord>[],
    ctx: Pick<LoadContext, 'runId' | 'previousCommitted'>,
  ): Promise<BatchOutcome> {
    const prev = this.lastSteps;
    const labels = this.labels.batch(prev?.labelled.promise ?? Promise.resolve());
    const steps = new BatchSteps(labels);
    this.lastSteps = steps;
    // Once the batch before has committed, its labels and counters are the database's to tell.
    if (prev)
      ctx.previousCommitted.then(
        () => this.labels.forget(prev.labels),
        () => {},
      );
    try {
      return await this.loadSteps(trx, rows, ctx, prev, steps);
    } finally {
      // A batch that failed lets the next go on to fail at its commit (it waits for this one).
      steps.settle();
    }
  }

  private async loadSteps(
    trx: Transaction<Database>,
    rows: readonly BatchRow<LocationRecord>[],
    ctx: Pick<LoadContext, 'runId' | 'previousCommitted'>,
    prev: BatchSteps | undefined,
    steps: BatchSteps,
  ): Promise<BatchOutcome> {
    const { runId } = ctx;
    const issues = new BatchIssues();
    // The batch before creates its missing Orgs under the Org lock first: this one finds them cached.
    await prev?.resolved.promise;
    const { candidates, refusedKeys } = await this.candidatesOf(trx, rows, issues);
    steps.createdOrgs = new Set((await this.orgs(trx)).takeCreated());
    steps.resolved.resolve();
    const codes = new Set(candidates.map((p) => p.code));
    for (const key of refusedKeys) codes.add(key.slice(key.indexOf(':') + 1));
    // A store code the batch before also names (under any Org: adoption looks across Orgs), or a
    // batch before that moved Locations between Orgs: wait for its commit, then read what it wrote.
    if (prev) {
      const before = await prev.matched.promise;
      if (before.moved || [...codes].some((c) => before.codes.has(c))) await ctx.previousCommitted;
    }

    const found = await findStatesAndRunKeys(trx, keysOf(candidates), runId);
    let states = found.states;
    // Keys of Locations the run created in an earlier batch, as they were before this batch moved any.
    const created = new Set(states.flatMap((e) => (createdByRun(e, runId) ? [keyOf(e.org_id, e.code)] : [])));
    const { moved, left } = await this.adopt(trx, candidates, states, runId, ctx.previousCommitted);
    steps.matched.resolve({ codes, moved: moved.size > 0 });
    const movedFrom = [...new Set(moved.values())];
    if (moved.size > 0) states = await findLocationStates(trx, keysOf(candidates));
    const stateByKey = new Map(states.map((e) => [keyOf(e.org_id, e.code), e]));
    const settled = (p: Pending) => isSettled(p, stateByKey.get(p.key), moved);

    const stored = this.refuseNew(candidates, stateByKey, issues, refusedKeys);
    const normalized = this.rows.normalizeUnsettled(stored, settled, issues, refusedKeys);
    const { unique, duplicates: inBatch } = lastRowWins(normalized);
    if (this.options.full) {
      // An Org an earlier batch met keeps that batch's first row: not sent again (nor waited for). The
      // batch before records its first rows first, so this one leaves out the Orgs it met.
      await prev?.firstsRecorded.promise;
      const firsts = unique.filter((p) => !this.firstRowOrgs.has(p.org.id));
      await recordFirstRows(
        trx,
        runId,
        firsts.map((p) => ({ orgId: p.org.id, code: p.code, line: p.line })),
      );
      for (const p of firsts) this.firstRowOrgs.add(p.org.id);
    }
    steps.firstsRecorded.resolve();
    const seenBefore = await recordBatchKeys(trx, runId, {
      unique,
      refusedKeys,
      stateByKey,
      created,
      left,
      recorded: found.recorded,
    });
    const split = splitSettled(unique, seenBefore, settled);
    this.rows.eager = split.toMerge.length * 2 > unique.length;

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
    // Ids and labels in sheet order: after the batch before took its own.
    await prev?.labelled.promise;
    const renamed = await assignKeys(trx, plan.inserts, plan.updates, steps.labels);
    steps.labelled.resolve();
    // A foreign key does not see an Org the batch before created until it commits (nor wait for it).
    if (prev && written(plan).some((x) => prev.createdOrgs.has(x.p.org.id))) await ctx.previousCommitted;
    await writeInserts(trx, plan.inserts, runId);
    await writeUpdates(trx, plan.updates, renamed, runId);
    await storeFingerprints(trx, plan.refreshed);

    // The Orgs that gave up a Location get their default settled again.
    await settleDefaults(trx, movedFrom, runId);
    // The counters' rows may be locked by the batch before (its own counters): written once it committed.
    await ctx.previousCommitted;
    await steps.labels.saveCounters(trx);
    const changedOrgIds = [
      ...new Set(
        written(plan)
          .map((x) => x.p.org.id)
          .concat(movedFrom),
      ),
    ];
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

  /** Moves by-name Locations to the Org their row now names (see findAdoptions): id -> Org left, and their states before. */
  private async adopt(
    trx: Transaction<Database>,
    candidates: readonly Pending[],
    states: Awaited<ReturnType<typeof findLocationStates>>,
    runId: number,
    previousCommitted: Promise<void>,
  ): Promise<{ moved: Map<number, number>; left: LocationState[] }> {
    const resolver = await this.orgs(trx);
    const { moves, moved, left } = await findAdoptions(
      trx,
      resolver,
      candidates,
      states,
      this.fallback !== undefined,
    );
    // A move locks Locations of two Orgs and settles their defaults, rows the batch before may be
    // writing: not before it committed (what was found is still right: it names none of these codes).
    if (moves.length > 0) await previousCommitted;
    await moveLocations(trx, moves, runId);
    return { moved, left };
  }

  /**
   * `--full` closes the Orgs' Locations the sheet did not name; then each Org's default is settled
   * (settleDefaults: a `--full` sheet's first row of each Org, else the default stays while open).
   */
  async finish(trx: Transaction<Database>, runId: number): Promise<FinishOutcome> {
    await this.orgs(trx);
    return finishRun(trx, runId, {
      full: this.options.full,
      fallbackOrgId: this.fallback?.id,
      maxGonePercent: this.options.maxGonePercent,
    });
  }
}
