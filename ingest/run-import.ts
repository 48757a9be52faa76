import { sql } from 'kysely';
import type { Db } from '../shared/db.js';
import { BizdirError, FeedFormatError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { ignoreError, observeLater, reasonOf } from '../shared/outage.js';
import type { ImportOptionsJson } from '../shared/tables.js';
import { type CsvRecord, openCsv, splitFields, UNTERMINATED_AT_END } from './csv.js';
import {
  type BatchContext,
  type BatchOutcome,
  type BatchRow,
  type FeedConfig,
  type FeedHandler,
  type MergeOutcome,
  MergeRaceError,
  type PreparedFeed,
  type StagedFeed,
  StaleStagedRowsError,
} from './feed-handler.js';
import { feedHandler } from './feeds.js';
import { insertIssues, type NewIssue } from './import-issues.repository.js';
import {
  addRunCounts,
  advancePart,
  type BatchCounts,
  failPart,
  failRun,
  getPart,
  getRun,
  type ImportPart,
  type ImportRun,
  noteRunRetry,
  restartPart,
  startRun,
  succeedPart,
} from './import-runs/import-runs.repository.js';
import {
  advanceMerge,
  isPartDone,
  isSettled,
  notePartRetry,
  type PartSource,
  partLocation,
  partsOf,
  type RunCounts,
  runCounts,
  startPart,
  succeedRun,
} from './import-runs/import-runs.state.js';
import { normalizeRecord } from './normalize-record.js';
import { openSource } from './source.js';
import { StatsKeeper } from './table-stats.js';

// 5,000 rows a batch: fewer statements per row than 2,000 (first import 10.2k -> 10.5k rows/s at 1M
// rows) while the worker's peak RSS stays flat near 430 MB from 200k to 1M rows.
const IMPORT_BATCH_SIZE = 5000;

/** Chunks of a staged run merged side by side when RunImportDeps.mergeLanes is not given. */
const MERGE_LANES = 2;

/**
 * The pooled connections one import job can hold at once (jobs/worker.ts sizes the worker's pool from
 * it): the feed's lock, held for the whole run (withFeedLock); per merge lane (or, for a feed loaded
 * directly, per batch in flight: the location feed's two) its transaction and a second connection it
 * waits for inside that transaction (public labels are reserved in short transactions of their own:
 * public-domains.ts reserveSlugs); and one for what runs between them (the next chunk's plan, the
 * statistics and progress of the chunk that committed). A pool with fewer can deadlock: the lanes
 * hold their transactions and wait for a connection that only they could give back (the pool's
 * connection timeout then fails the attempt; seen with the index sync running beside a re-import).
 */
export const IMPORT_JOB_CONNECTIONS = 1 + 2 * MERGE_LANES + 1;

/**
 * What a run needs from its caller (the queue processors; tests and tools call runImport directly).
 *
 * A run is safe under failure: each batch commits its records, rejects, counters and the checkpoint in one
 * transaction. A retried run re-reads the file, skips the records before the checkpoint and goes on,
 * so a killed worker plus a retry ends with the same records and counts as one clean run.
 */
export interface RunImportDeps {
  db: Db;
  /** From the process's configuration, read once at start-up (the worker's, or a tool's own). */
  config: FeedConfig;
  logger?: Logger;
  /** Called after each committed batch (and once at the end) with the run's counters. */
  onProgress?: (progress: ImportProgress) => void | Promise<void>;
  /** Called after each commit with the Orgs whose content changed in it (search indexing hooks in here). */
  onBatchCommitted?: (orgIds: number[]) => void | Promise<void>;
  /**
   * Chunks of a staged run merged side by side, each in its own transaction and connection (default
   * MERGE_LANES in this file; the pool needs this many connections besides the one holding the feed's lock).
   */
  mergeLanes?: number;
  /** Keys per merge chunk and transaction (default: the feed's own; MERGE_CHUNK in registrar.feed.ts). */
  mergeChunk?: number;
  /**
   * This many batches' transactions at once (default: the feed's own, PreparedFeed.batchesInFlight);
   * 1 loads one batch after the other. The pool needs this many connections besides the feed lock's.
   */
  batchesInFlight?: number;
  /** Records per batch and transaction (default IMPORT_BATCH_SIZE in this file). */

  batchSize?: number;
  /** Where a zip behind a URL is downloaded to (default: the OS temp folder). */
  tmpDir?: string;
  /**
   * Shutdown: once aborted, the run stops after the batch in flight has committed and
   * throws ImportInterruptedError; the run stays `running` at its checkpoint for the next worker.
   */
  signal?: AbortSignal;
}

export interface ImportProgress extends RunCounts {
  runId: number;
  status: ImportRun['status'];
  bytesRead: number;
  bytesTotal: number | null;
}

/** The worker is shutting down: the run stopped cleanly between batches and resumes elsewhere. */
export class ImportInterruptedError extends BizdirError {
  override name = 'ImportInterruptedError';
  constructor(message: string) {
    super(message, true);
  }
}

/** An import that did not finish; not `retryable` when trying again cannot help (bad file, missing source). */
export class ImportFailedError extends BizdirError {
  override name = 'ImportFailedError';
}

export const progressOf = (run: ImportRun): ImportProgress => ({
  runId: run.id,
  status: run.status,
  ...runCounts(run),
  bytesRead: run.bytes_read,
  bytesTotal: run.bytes_total,
});

/**
 * Runs an import run to its end: every part not read yet (in this process, one after the other),
 * then the run's last step. This is what the run's own job calls (when the part jobs have read the
 * parts, only the last step is left); tests and tools call it directly.
 */
export async function runImport(deps: RunImportDeps, runId: number): Promise<ImportRun> {
  const { db } = deps;
  const run = await getRun(db, runId);
  if (!run) throw new ImportFailedError(`import run ${runId} does not exist`, false);
  // A job delivered twice (or retried after it finished) must not load again.
  if (isSettled(run.status)) return run;
  const handler = feedHandler(run.feed);
  if (!handler) {
    const message = `no handler for feed "${run.feed}"`;
    await failRun(db, runId, message);
    throw new ImportFailedError(message, false);
  }
  const parts = await partsOf(db, run);
  if (!handler.staged) {
    if (parts.length !== 1) {
      const message = `the ${run.feed} feed takes one source per run (this run has ${parts.length})`;
      await failRun(db, runId, message);
      throw new ImportFailedError(message, false);
    }
    return withRunErrors(deps, runId, () =>
      withFeedLock(deps, run, handler, async (fresh) => loadDirect(deps, fresh, parts[0]!)),
    );
  }
  for (const part of parts) {
    if (isPartDone(part.status)) continue;
    // A part that fails for good is recorded (runPart); the run still settles below: the parts that
    // loaded are merged, nothing is marked as gone, and the run fails.
    await runPart(deps, part.id).catch((error: unknown) => {
      if (error instanceof ImportFailedError && !error.retryable) return;
      throw error;
    });
  }
  return settleRun(deps, runId);
}

/** Runs `fn` holding the feed's lock (a session advisory lock on a connection of its own). */
async function withFeedLock<T>(
  deps: RunImportDeps,
  run: ImportRun,
  handler: FeedHandler,
  fn: (fresh: ImportRun) => Promise<T | ImportRun>,
): Promise<T | ImportRun> {
  const { db } = deps;
  const lockKey = `bizdir:import:${handler.lockKey(run.options)}`;
  // Held for the whole step: a second import of the same register waits here. If this process dies,
  // Postgres drops the connection and the lock with it.
  return db.connection().execute(async (conn) => {
    const got = await sql<{ ok: boolean }>`select pg_try_advisory_lock(hashtext(${lockKey})) as ok`.execute(
      conn,
    );
    if (!got.rows[0]?.ok) {
      deps.logger?.info({ runId: run.id, lockKey }, 'waiting for another import of the same feed to finish');
      await sql`select pg_advisory_lock(hashtext(${lockKey}))`.execute(conn);
    }
    try {
      // Re-read: another worker may have finished this run while we waited.
      const fresh = await getRun(db, run.id);
      if (!fresh || isSettled(fresh.status)) return fresh ?? run;
      return await fn(fresh);
    } finally {
      await sql`select pg_advisory_unlock(hashtext(${lockKey}))`.execute(conn);
    }
  });
}

/** Maps a run-level step's failure: a permanent one fails the run, a passing one is noted for the retry. */
async function withRunErrors(
  deps: RunImportDeps,
  runId: number,
  fn: () => Promise<ImportRun>,
): Promise<ImportRun> {
  try {
    return await fn();
  } catch (error) {
    // Not a failure: nothing to record, the run's row already says where it stopped.
    if (error instanceof ImportInterruptedError) throw error;
    const failure = classify(error);
    if (!failure.retryable) await failRun(deps.db, runId, failure.message);
    else {
      await noteRunRetry(deps.db, runId, failure.message).catch((err: unknown) =>
        deps.logger?.warn({ runId, err: reasonOf(err) }, 'could not note the retry on the run'),
      );
    }
    deps.logger?.warn(
      { runId, err: failure.message, permanent: !failure.retryable },
      'import attempt failed',
    );
    throw failure;
  }
}

/**
 * Reads one part of a staged run into its staging area, from its checkpoint to its end. What a part
 * job runs; any number of them run at once, on any workers. A part that fails for good is recorded
 * as failed (the run fails when it settles); a passing failure is noted and thrown for the retry.
 */
export async function runPart(deps: RunImportDeps, partId: number): Promise<ImportPart | undefined> {
  const { db } = deps;
  const part = await getPart(db, partId);
  if (!part || isPartDone(part.status)) return part;
  const run = await getRun(db, part.run_id);
  if (!run || isSettled(run.status)) return part;
  const handler = feedHandler(run.feed);
  try {
    if (!handler?.staged) throw new ImportFailedError(`the ${run.feed} feed is not read in parts`, false);
    await readPart(deps, run, part, handler, handler.staged);
    return await getPart(db, partId);
  } catch (error) {
    if (error instanceof ImportInterruptedError) throw error;
    const failure = classify(error);
    if (!failure.retryable) await failPart(db, part.id, failure.message);
    else {
      await notePartRetry(db, part, failure.message).catch((err: unknown) =>
        deps.logger?.warn(
          { runId: run.id, part: part.part_no, err: reasonOf(err) },
          'could not note the retry on the part',
        ),
      );
    }
    deps.logger?.warn(
      { runId: run.id, part: part.part_no, err: failure.message, permanent: !failure.retryable },
      'import part failed',
    );
    throw failure;
  }
}

async function readPart(
  deps: RunImportDeps,
  run: ImportRun,
  start: ImportPart,
  handler: FeedHandler,
  staged: StagedFeed,
): Promise<void> {
  const { db } = deps;
  await staged.open(db, run.id);
  let part = start;
  if (part.checkpoint_rows > 0 && (await staged.stagedRows(db, run.id, part.part_no)) !== part.accepted) {
    // The staged rows did not survive (a database crash empties unlogged tables): read it again.
    deps.logger?.warn({ runId: run.id, part: part.part_no }, 'staged rows lost; reading the part again');
    await db.transaction().execute(async (trx) => {
      await staged.dropPart(trx, run.id, part.part_no);
      await restartPart(trx, part);
    });
    part = (await getPart(db, part.id))!;
  }
  await readSource(deps, run, part, handler);
  deps.logger?.info({ runId: run.id, part: part.part_no }, 'import part read');
}

/**
 * The run's last step, once every part is read: merges the staged rows (one chunk of keys per
 * transaction, resumable), then settles: succeeded (with `--full` marking), or failed when a part
 * failed (what loaded stays loaded, nothing is marked as gone).
 */
export async function settleRun(deps: RunImportDeps, runId: number): Promise<ImportRun> {
  const { db } = deps;
  const run = await getRun(db, runId);
  if (!run) throw new ImportFailedError(`import run ${runId} does not exist`, false);
  if (isSettled(run.status)) return run;
  const handler = feedHandler(run.feed);
  if (!handler?.staged) return runImport(deps, runId);
  const staged = handler.staged;
  return withRunErrors(deps, runId, () =>
    withFeedLock(deps, run, handler, async (fresh) => {
      let parts = await partsOf(db, fresh);
      // Parts whose jobs are gone (a flushed queue, a job that stalled out) are read here.
      // runPart records and logs a part's failure; the merge below judges the run by the parts' rows.
      for (const part of parts) {
        if (isPartDone(part.status)) continue;
        await runPart(deps, part.id).catch(
          ignoreError(`part ${part.part_no} of run ${runId} failed; its row says so`, deps.logger),
        );
      }
      // Staged rows lost since their part was read (a database crash empties the unlogged staging
      // table): read those parts again, or the merge would miss them and `--full` would mark their
      // companies as gone.
      await staged.open(db, runId);
      // One pass over the stage for every part's count (a count per part was a scan of the whole
      // stage each: seven at 1M rows in seven parts).
      const counts = await staged.stagedRowsByPart(db, runId);
      for (const part of await partsOf(db, fresh)) {
        if (part.status !== 'succeeded') continue;
        if ((counts.get(part.part_no) ?? 0) === Number(part.accepted)) continue;
        deps.logger?.warn({ runId, part: part.part_no }, 'staged rows lost; reading the part again');
        await db.transaction().execute(async (trx) => {
          await staged.dropPart(trx, runId, part.part_no);
          await restartPart(trx, part);
        });
        await runPart(deps, part.id);
      }
      parts = await partsOf(db, fresh);
      const failed = parts.filter((p) => p.status === 'failed');
      const unread = parts.filter((p) => !isPartDone(p.status));
      if (unread.length > 0)
        throw new ImportFailedError(`part ${unread[0]!.part_no} could not be read`, true);
      await startRun(db, runId);
      const accepted = parts.reduce((n, p) => n + Number(p.accepted), 0);
      const ctx = { runId, partNo: 0, options: fresh.options };
      if (failed.length === 0 && fresh.options.full && accepted === 0) {
        await staged.discard(db, runId);
        throw new FeedFormatError(
          'a --full import needs at least one valid row: this file would mark every record as gone, refused',
        );
      }
      let current = await mergeRereading(deps, fresh, staged, ctx);
      const complete = failed.length === 0;
      const finished = await db
        .transaction()
        .execute(async (trx) => {
          const outcome = await staged.finish(trx, ctx, complete);
          // Every accepted row that did not win its key was a duplicate (counted once, at the end).
          const duplicates = accepted - Number(current.merged_rows) - Number(current.duplicates);
          await addRunCounts(trx, runId, { duplicates });
          return { outcome, run: complete ? await succeedRun(trx, runId, outcome.closed) : current };
        })
        .catch(async (error: unknown) => {
          // Refused by the feed (too many marked as gone): the run fails for good, its stage goes.
          if (error instanceof FeedFormatError) await staged.discard(db, runId);
          throw error;
        });
      current = finished.run;
      if (finished.outcome.changedOrgIds.length > 0)
        await deps.onBatchCommitted?.(finished.outcome.changedOrgIds);
      if (!complete) {
        const first = failed[0]!;
        const reason = first.error ?? 'no reason recorded';
        await failRun(
          db,
          runId,
          parts.length === 1 ? reason : `part ${first.part_no} (${partLocation(first)}) failed: ${reason}`,
        );
        const view = (await getRun(db, runId))!;
        await deps.onProgress?.(progressOf(view));
        throw new ImportFailedError(view.error ?? 'a part failed', false);
      }
      await deps.onProgress?.(progressOf(current));
      deps.logger?.info(progressOf(current), 'import finished');
      return current;
    }),
  );
}

/**
 * Merges, and when staged rows went stale (StaleStagedRowsError: another run of the feed merged while
 * a part was read), reads those parts again and goes on. The caller holds the feed's lock, so the
 * second reading cannot go stale; chunks already merged stay merged (the merge resumes after them),
 * and the parts' counters start again from zero, so the counts stay exact.
 */
async function mergeRereading(
  deps: RunImportDeps,
  run: ImportRun,
  staged: StagedFeed,
  ctx: BatchContext,
): Promise<ImportRun> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await merge(deps, (await getRun(deps.db, run.id)) ?? run, staged, ctx);
    } catch (error) {
      // A chunk that lost a race (MergeRaceError) rolled back: merging again from the position resolves it.
      if (error instanceof MergeRaceError && attempt <= 3) continue;
      if (!(error instanceof StaleStagedRowsError) || attempt > 3) throw error;
      deps.logger?.info(
        { runId: run.id, parts: error.partNos },
        'staged rows went stale; reading those parts again',
      );
      for (const partNo of error.partNos) {
        const part = (await partsOf(deps.db, run)).find((p) => p.part_no === partNo)!;
        await deps.db.transaction().execute(async (trx) => {
          await staged.dropPart(trx, run.id, partNo);
          await restartPart(trx, part);
        });
        await runPart(deps, part.id);
      }
    }
  }
}

/**
 * Merges a staged run's rows into the records, one chunk per transaction, from where it got to.
 *
 * The chunks' bounds are found first (one pass over the staged keys); then `mergeLanes` chunks at a
 * time are planned and written side by side (each in its own transaction, on as many connections),
 * so the merge is not bound to one Postgres backend; they commit in key order: a chunk's transaction, its writes done, waits for the chunk before it to commit, then moves
 * the merge position and commits. So the position always means "every key up to here is merged", a
 * killed worker resumes after the last committed chunk, and a chunk that fails rolls back the chunks
 * after it too (they are merged again by the retry).
 */
async function merge(
  deps: RunImportDeps,
  run: ImportRun,
  staged: StagedFeed,
  ctx: BatchContext,
): Promise<ImportRun> {
  const { db } = deps;
  const handler = feedHandler(run.feed)!;
  await staged.prepareMerge(db, run.id);
  const stats = new StatsKeeper(db, handler.lookupColumns);
  const lanes = Math.max(1, Math.trunc(deps.mergeLanes ?? MERGE_LANES));
  let current = run;
  const after = run.merge_after ?? '';
  type Committed = { outcome: MergeOutcome; run: ImportRun };
  const inFlight: Promise<Committed | null>[] = [];
  let previous: Promise<unknown> = Promise.resolve();
  // After each commit, in key order: statistics, search indexing, progress.
  const settle = async (chunk: Committed | null) => {
    if (!chunk) return;
    current = chunk.run;
    await stats.afterBatch(current.inserted);
    if (chunk.outcome.changedOrgIds.length > 0) await deps.onBatchCommitted?.(chunk.outcome.changedOrgIds);
    await deps.onProgress?.(progressOf(current));
  };
  try {
    const bounds = await staged.chunkBounds(db, ctx, after, deps.mergeChunk);
    const ranges = [...bounds, null].map((upto, i) => ({ after: i === 0 ? after : bounds[i - 1]!, upto }));
    for (const range of ranges) {
      if (deps.signal?.aborted) break;
      const before = previous;
      // Each lane plans its chunk (its winners and labels) and writes it; the plans of the lanes run
      // side by side too (for an unchanged re-import, planning is most of the merge).
      const chunk = (async (): Promise<Committed | null> => {
        const plan = await staged.planChunk(db, ctx, range.after, range.upto);
        if (!plan) {
          await before;
          return null;
        }
        try {
          return await db.transaction().execute(async (trx) => {
            await sql`set local synchronous_commit = off`.execute(trx);
            // A chunk that waited on a row of a later chunk (which waits, in JavaScript, for this one's
            // commit) would wait forever: Postgres cannot see that cycle. None is known (the register's
            // labels: registrar.loader.ts labelsFor); the bound turns an unforeseen one into an error.
            if (lanes > 1) await sql`set local lock_timeout = '60s'`.execute(trx);
            const outcome = await staged.mergeChunk(db, trx, ctx, plan);
            // Commit in key order (a failed chunk before this one fails this one: it rolls back).
            await before;
            const counts = {
              inserted: outcome.inserted,
              updated: outcome.updated,
              unchanged: outcome.unchanged,
              merged: outcome.merged,
              mergeAfter: outcome.last,
            };
            return { outcome, run: await advanceMerge(trx, run.id, counts, outcome.byPart) };
          });
        } finally {
          staged.chunkSettled?.(ctx, plan);
        }
      })();
      // Awaited below, in order; this only keeps a rejection from counting as unhandled meanwhile.
      chunk.catch(() => {});
      previous = chunk;
      inFlight.push(chunk);
      if (inFlight.length >= lanes) await settle(await inFlight.shift()!);
    }
    while (inFlight.length > 0) await settle(await inFlight.shift()!);
  } finally {
    // On a failure, the chunks still in flight roll back (each waits for the one before it); wait for
    // them so no transaction of this merge outlives it.
    await Promise.allSettled(inFlight);
  }
  if (deps.signal?.aborted)
    throw new ImportInterruptedError(`import run ${run.id} handed back while merging`);
  if (current.inserted + current.updated > 0) await stats.afterRun();
  return current;
}

/**
 * An attempt's failure as the run records it. Bizdir's own errors say whether a retry can help
 * (classified where they arise: a bad file, a missing source, corrupt compressed data, a lost race);
 * anything else (a lost connection, a deadlock) may pass.
 */
function classify(error: unknown): ImportFailedError {
  if (error instanceof ImportFailedError) return error;
  if (error instanceof BizdirError) return new ImportFailedError(error.message, error.retryable);
  const message = error instanceof Error ? error.message : String(error);
  return new ImportFailedError(message, true);
}

/** A direct-load feed's one part, batches written as they come, then its finish, under the feed lock. */
async function loadDirect(deps: RunImportDeps, run: ImportRun, part: ImportPart): Promise<ImportRun> {
  const { db } = deps;
  const handler = feedHandler(run.feed)!;
  const { current, prepared } = await readSource(deps, run, part, handler);
  const acceptedRows = current.rows_read - current.rejected;
  if (run.options.full && acceptedRows === 0) {
    throw new FeedFormatError(
      'a --full import needs at least one valid row: this file would mark every record as gone, refused',
    );
  }
  const ctx = { runId: run.id, partNo: part.part_no, options: run.options };
  const finished = await db.transaction().execute(async (trx) => {
    const outcome = (await prepared.finish?.(trx, { ...ctx, acceptedRows })) ?? {
      closed: 0,
      changedOrgIds: [],
    };
    return { outcome, run: await succeedRun(trx, run.id, outcome.closed) };
  });
  if (current.inserted + current.updated > 0) await new StatsKeeper(db, handler.lookupColumns).afterRun();
  if (finished.outcome.changedOrgIds.length > 0)
    await deps.onBatchCommitted?.(finished.outcome.changedOrgIds);
  await deps.onProgress?.(progressOf(finished.run));
  deps.logger?.info(progressOf(finished.run), 'import finished');
  return finished.run;
}

/**
 * Opens a part's source and reads its header as readSource does, then lets it go: throws
 * FeedFormatError or SourceError when the file is not the feed's format (another CSV, an empty file,
 * a zip without CSV text). `bizdir import` asks this of local files before it records a run.
 */
export async function checkPartHeader(
  handler: FeedHandler,
  part: PartSource,
  options: ImportOptionsJson,
  config: FeedConfig,
): Promise<void> {
  const source = await openSource(part.source, part.entry === null ? {} : { entry: part.entry });
  try {
    const csv = await openCsv(source.stream, { deferFields: handler.recognizesRows === true });
    handler.prepare(csv.header, options, csv.headerRaw, config);
  } finally {
    await source.close();
  }
}

/**
 * Reads one source from its part's checkpoint to its end, committing each batch (records or staged
 * rows, rejects, counters and the checkpoint) in one transaction.
 */
async function readSource(
  deps: RunImportDeps,
  run: ImportRun,
  part: ImportPart,
  handler: FeedHandler,
): Promise<{ current: ImportRun; prepared: PreparedFeed<unknown> }> {
  const { db } = deps;
  const source = await openSource(part.source, {
    ...(deps.tmpDir ? { tmpDir: deps.tmpDir } : {}),
    ...(part.entry !== null ? { entry: part.entry } : {}),
  });
  try {
    await startPart(db, part, source.bytesTotal);
    const csv = await openCsv(source.stream, {
      batchSize: deps.batchSize ?? IMPORT_BATCH_SIZE,
      deferFields: handler.recognizesRows === true,
    });
    const prepared = handler.prepare(csv.header, run.options, csv.headerRaw, deps.config);
    const ctx = { runId: run.id, partNo: part.part_no, options: run.options };
    const skip = part.checkpoint_rows;
    let seen = 0;
    let current = run;
    const stats = handler.staged ? null : new StatsKeeper(db, handler.lookupColumns);
    // Read ahead: the next batch is read, parsed and normalized (JavaScript work) while this one's
    // transaction keeps Postgres busy, so the two run side by side on separate cores. Normalizing
    // yields to the event loop every few hundred rows (normalizeBatch), so each of this batch's
    // statements is sent as soon as the previous one answers instead of after the whole next batch.
    const prepareNext = async () => {
      const step = await csv.batches.next();
      if (step.done) return null;
      const last = step.value.at(-1);
      if (run.options.full && last?.error === UNTERMINATED_AT_END)
        // The file ends inside a record: cut short (or a stray quote swallowed its end), so it is not
        // the whole list `--full` needs. The part fails for good; the run marks nothing as gone.
        throw new FeedFormatError(
          `line ${last.line}: the file ends inside a quoted field (cut short, or a stray quote): ` +
            'a --full import needs the whole file, nothing was marked as gone',
        );
      const start = seen;
      seen += step.value.length;
      // This batch's own end: `seen` moves on while it is prepared (other batches are read meanwhile).
      const checkpoint = seen;
      if (checkpoint <= skip) return { checkpoint, records: [], rows: [], issues: [] };
      const records = start < skip ? step.value.slice(skip - start) : step.value;
      // Rows the feed knows unchanged by their raw text skip splitting and normalizing altogether.
      const known = prepared.recognize
        ? await prepared.recognize(db, records, ctx)
        : new Map<number, unknown>();
      const rest = known.size === 0 ? records : records.filter((_, i) => !known.has(i));
      const normalized = prepared.normalizeBatch
        ? await prepared.normalizeBatch(rest, ctx)
        : await normalizeBatch(prepared, splitFields(rest), csv.header.length);
      const knownRows = [...known].map(([i, record]) => ({
        line: records[i]!.line,
        raw: records[i]!.raw,
        record,
      }));
      // A rejected row keeps the key it names, when readable (only rejects: a few per batch at most).
      if (prepared.keyOfRejected)
        for (const issue of normalized.issues)
          if (issue.severity === 'rejected' && issue.raw !== null && issue.key === undefined)
            issue.key = prepared.keyOfRejected(issue.raw);
      return {
        checkpoint,
        records,
        rows: [...knownRows, ...normalized.rows],
        issues: normalized.issues,
      };
    };
    const readAhead = () => {
      // Awaited by the loop below; a batch that fails while we are already failing is not unhandled.
      return observeLater(prepareNext());
    };
    // Batches prepared ahead of the one being written: one, or the feed's own depth (a feed that
    // prepares on another thread keeps it busy while the main thread cuts the batch after).
    const ahead = Array.from({ length: Math.max(1, prepared.readAhead ?? 1) }, readAhead);
    // Batches in flight (PreparedFeed.batchesInFlight): each commits after the one before it, so they
    // are settled (statistics, indexing hooks, progress) in sheet order too.
    const depth = Math.max(1, Math.trunc(deps.batchesInFlight ?? prepared.batchesInFlight ?? 1));
    type Committed = { outcome: BatchOutcome; run: ImportRun; checkpoint: number };
    const inFlight: Promise<Committed>[] = [];
    let previousCommitted: Promise<void> = Promise.resolve();
    let previousStarted: Promise<void> = Promise.resolve();
    const settle = async (batch: Committed) => {
      current = batch.run;
      await stats?.afterBatch(current.inserted);
      if (batch.outcome.changedOrgIds.length > 0) await deps.onBatchCommitted?.(batch.outcome.changedOrgIds);
      await deps.onProgress?.(progressOf(current));
      if (deps.signal?.aborted)
        throw new ImportInterruptedError(
          `import run ${run.id} part ${part.part_no} handed back at row ${batch.checkpoint}`,
        );
    };
    try {
      for (;;) {
        const item = await ahead.shift()!;
        if (!item) break;
        ahead.push(readAhead());
        if (item.records.length === 0) continue;
        const { records, rows, issues, checkpoint } = item;
        const before = previousCommitted;
        // loadBatch is called in sheet order even when a later batch's connection is ready first.
        const startedBefore = previousStarted;
        let started = () => {};
        previousStarted = new Promise<void>((resolve) => {
          started = resolve;
        });
        const batch = db.transaction().execute(async (trx): Promise<Committed> => {
          await startedBefore;
          const loading = (async () => {
            // Safe without waiting for the WAL flush: the checkpoint commits with the batch, so a server
            // crash can only lose whole batches together with their checkpoint, and the retry redoes them.
            await sql`set local synchronous_commit = off`.execute(trx);
            // Batches in flight wait for each other in JavaScript too, where Postgres cannot see a
            // cycle: a lock wait that outlasts any batch fails the batch (the retry resumes) instead.
            if (depth > 1) await sql`set local lock_timeout = '60s'`.execute(trx);
            const pending = prepared.loadBatch(trx, rows, { ...ctx, previousCommitted: before });
            started();
            return pending;
          })();
          const outcome = await loading.finally(started);
          const all = outcome.issues ? [...issues, ...outcome.issues] : issues;
          await insertIssues(trx, run.id, part.part_no, all);
          const counts = countsOf(records.length, outcome, all);
          // Commit in sheet order: the checkpoint moves past this batch only once every batch before
          // it has committed (one that failed fails this one: it rolls back, and the retry redoes both).
          await before;
          return {
            outcome,
            checkpoint,
            run: await advancePart(
              trx,
              part,
              { ...counts, accepted: rows.length },
              checkpoint,
              source.bytesRead(),
            ),
          };
        });
        // Awaited below, in order; this only keeps a rejection from counting as unhandled meanwhile.
        batch.catch(() => {}).finally(started);
        previousCommitted = batch.then(() => undefined);
        previousCommitted.catch(() => {});
        inFlight.push(batch);
        if (inFlight.length >= depth) await settle(await inFlight.shift()!);
      }
      while (inFlight.length > 0) await settle(await inFlight.shift()!);
    } finally {
      // On a failure or a hand-back, no transaction of this part outlives it: the batches in flight
      // commit (or roll back after the one that failed) before the part's connection is let go.
      await Promise.allSettled(inFlight);
    }
    // An export that stops after its header is almost always a mistake upstream (a failed query, the
    // wrong sheet), not news that nothing changed: the file fails, with or without --full. Nothing
    // was written (there was no batch).
    if (seen === 0) throw new FeedFormatError('the file has a header but no data rows');
    if (handler.staged) await succeedPart(db, part.id, source.bytesRead());
    return { current, prepared };
  } finally {
    await source.close();
  }
}

/** Rows normalized between two yields to the event loop (a few milliseconds of work). */
const NORMALIZE_SLICE = 250;
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

async function normalizeBatch<R>(prepared: PreparedFeed<R>, records: readonly CsvRecord[], columns: number) {
  const rows: BatchRow<R>[] = [];
  const issues: NewIssue[] = [];
  for (let i = 0; i < records.length; i++) {
    if (i > 0 && i % NORMALIZE_SLICE === 0) await yieldToEventLoop();
    const rec = records[i]!;
    const record = normalizeRecord(
      rec,
      columns,
      (fields, raw) => prepared.normalize(fields, rec.line, raw),
      issues,
    );
    if (record !== undefined) rows.push({ line: rec.line, raw: rec.raw, record });
  }
  return { rows, issues };
}

function countsOf(rowsRead: number, outcome: BatchOutcome, issues: readonly NewIssue[]): BatchCounts {
  let rejected = 0;
  let warnings = 0;
  for (const i of issues) {
    if (i.severity === 'rejected') rejected++;
    else warnings++;
  }
  return {
    rows_read: rowsRead,
    inserted: outcome.inserted,
    updated: outcome.updated,
    unchanged: outcome.unchanged,
    rejected,
    warnings,
    duplicates: outcome.duplicates,
  };
}
