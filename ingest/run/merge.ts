import { InOrder } from '../../shared/in-order.js';
import {
  type BatchContext,
  type MergeOutcome,
  MergeRaceError,
  type StagedFeed,
  StaleStagedRowsError,
} from '../feed-handler.js';
import { feedHandler } from '../feeds.js';
import { getRun, type ImportRun } from '../import-runs/import-runs.repository.js';
import { advanceMerge, partsOf } from '../import-runs/import-runs.state.js';
import { StatsKeeper } from '../table-stats.js';
import { MERGE_LANES, progressOf, type RunImportDeps } from './deps.js';
import { ImportInterruptedError } from './errors.js';
import { relaxTransaction } from './run.repository.js';
import { rereadPart } from './run-part.js';

/**
 * Merges, and when staged rows went stale (StaleStagedRowsError: another run of the feed merged while
 * a part was read), reads those parts again and goes on. The caller holds the feed's lock, so the
 * second reading cannot go stale; chunks already merged stay merged (the merge resumes after them),
 * and the parts' counters start again from zero, so the counts stay exact.
 */
export async function mergeRereading(
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
        await rereadPart(deps, staged, part);
      }
    }
  }
}

type Committed = { outcome: MergeOutcome; run: ImportRun };

/**
 * Merges a staged run's rows into the records, one chunk per transaction, from where it got to.
 *
 * The chunks' bounds are found first (one pass over the staged keys); then `mergeLanes` chunks at a
 * time are planned and written side by side (each in its own transaction, on as many connections),
 * so the merge is not bound to one Postgres backend; they commit in key order: a chunk's transaction,
 * its writes done, waits for the chunk before it to commit, then moves the merge position and commits.
 * So the position always means "every key up to here is merged", a killed worker resumes after the
 * last committed chunk, and a chunk that fails rolls back the chunks after it too (they are merged
 * again by the retry).
 */
async function merge(
  deps: RunImportDeps,
  run: ImportRun,
  staged: StagedFeed,
  ctx: BatchContext,
): Promise<ImportRun> {
  const { db } = deps;
  const handler = feedHandler(run.feed)!;
  const preparing = performance.now();
  await staged.prepareMerge(db, ctx);
  // The preparation runs on one connection before any chunk: an operator sees its share of the merge.
  deps.logger?.info(
    { runId: run.id, seconds: Math.round(performance.now() - preparing) / 1000 },
    'merge prepared',
  );
  const stats = new StatsKeeper(db, handler.lookupColumns);
  const lanes = Math.max(1, Math.trunc(deps.mergeLanes ?? MERGE_LANES));
  let current = run;
  const after = run.merge_after ?? '';
  // After each commit, in key order: statistics, search indexing, progress.
  const chunks = new InOrder<Committed | null>(lanes, async (chunk) => {
    if (!chunk) return;
    current = chunk.run;
    await stats.afterBatch(current.inserted);
    if (chunk.outcome.changedOrgIds.length > 0) await deps.onBatchCommitted?.(chunk.outcome.changedOrgIds);
    await deps.onProgress?.(progressOf(current));
  });
  let previous: Promise<unknown> = Promise.resolve();
  try {
    const bounds = await staged.chunkBounds(db, ctx, after, deps.mergeChunk);
    const ranges = [...bounds, null].map((upto, i) => ({ after: i === 0 ? after : bounds[i - 1]!, upto }));
    for (const range of ranges) {
      if (deps.signal?.aborted) break;
      const chunk = mergeChunk(deps, run, staged, ctx, range, previous, lanes > 1);
      previous = chunk;
      await chunks.add(chunk);
    }
    await chunks.drain();
  } finally {
    // On a failure, the chunks still in flight roll back (each waits for the one before it); wait for
    // them so no transaction of this merge outlives it.
    await chunks.quiesce();
  }
  if (deps.signal?.aborted)
    throw new ImportInterruptedError(`import run ${run.id} handed back while merging`);
  if (current.inserted + current.updated > 0) await stats.afterRun();
  return current;
}

/**
 * One chunk: planned (its winners and labels) and written in its own transaction, committed after
 * `before` (the chunk before it). The lanes' plans run side by side too: for an unchanged
 * re-import, planning is most of the merge.
 */
async function mergeChunk(
  deps: RunImportDeps,
  run: ImportRun,
  staged: StagedFeed,
  ctx: BatchContext,
  range: { after: string; upto: string | null },
  before: Promise<unknown>,
  sideBySide: boolean,
): Promise<Committed | null> {
  const { db } = deps;
  const plan = await staged.planChunk(db, ctx, range.after, range.upto);
  if (!plan) {
    await before;
    return null;
  }
  try {
    return await db.transaction().execute(async (trx) => {
      // A chunk that waited on a row of a later chunk (which waits, in JavaScript, for this one's
      // commit) would wait forever: Postgres cannot see that cycle. None is known (the register's
      // labels: registrar.labels.ts labelsFor); the lock timeout turns an unforeseen one into an error.
      await relaxTransaction(trx, sideBySide);
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
}
