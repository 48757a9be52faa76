import { FeedFormatError } from '../../shared/errors.js';
import { InOrder } from '../../shared/in-order.js';
import { observeLater } from '../../shared/outage.js';
import { openCsv } from '../csv.js';
import type { BatchContext, BatchOutcome, FeedHandler, PreparedFeed } from '../feed-handler.js';
import { insertIssues, type NewIssue } from '../import-runs/import-issues.repository.js';
import { succeedPart } from '../import-runs/import-parts.repository.js';
import {
  advancePart,
  type BatchCounts,
  type ImportPart,
  type ImportRun,
} from '../import-runs/import-runs.repository.js';
import { startPart } from '../import-runs/import-runs.state.js';
import { type FeedSource, openSource } from '../source.js';
import { StatsKeeper } from '../table-stats.js';
import { IMPORT_BATCH_SIZE, progressOf, type RunImportDeps } from './deps.js';
import { ImportInterruptedError } from './errors.js';
import { BatchPreparer, type PreparedBatch } from './prepare-batch.js';
import { relaxTransaction } from './run.repository.js';

type Committed = { outcome: BatchOutcome; run: ImportRun; checkpoint: number };

/**
 * Reads one source from its part's checkpoint to its end, committing each batch (records or staged
 * rows, rejects, counters and the checkpoint) in one transaction.
 */
export async function readSource(
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
    const preparer = new BatchPreparer(db, csv, prepared, ctx, part.checkpoint_rows);
    let current = run;
    const stats = handler.staged ? null : new StatsKeeper(db, handler.lookupColumns);
    // Read ahead: the next batch is read, parsed and normalized (JavaScript work) while this one's
    // transaction keeps Postgres busy, so the two run side by side on separate cores. Normalizing
    // yields to the event loop every few hundred rows (normalizeBatch), so each of this batch's
    // statements is sent as soon as the previous one answers instead of after the whole next batch.
    // Awaited by the loop below; a batch that fails while we are already failing is not unhandled.
    const readAhead = () => observeLater(preparer.next());
    // Batches prepared ahead of the one being written: one, or the feed's own depth (a feed that
    // prepares on another thread keeps it busy while the main thread cuts the batch after).
    const ahead = Array.from({ length: Math.max(1, prepared.readAhead ?? 1) }, readAhead);
    // Batches in flight (PreparedFeed.batchesInFlight): each commits after the one before it, so they
    // are settled (statistics, indexing hooks, progress) in sheet order too.
    const depth = Math.max(1, Math.trunc(deps.batchesInFlight ?? prepared.batchesInFlight ?? 1));
    const batches = new InOrder<Committed>(depth, async (batch) => {
      current = batch.run;
      await stats?.afterBatch(current.inserted);
      if (batch.outcome.changedOrgIds.length > 0) await deps.onBatchCommitted?.(batch.outcome.changedOrgIds);
      await deps.onProgress?.(progressOf(current));
      if (deps.signal?.aborted)
        throw new ImportInterruptedError(
          `import run ${run.id} part ${part.part_no} handed back at row ${batch.checkpoint}`,
        );
    });
    let previousCommitted: Promise<void> = Promise.resolve();
    let previousStarted: Promise<void> = Promise.resolve();
    try {
      for (;;) {
        const item = await ahead.shift()!;
        if (!item) break;
        ahead.push(readAhead());
        if (item.records.length === 0) continue;
        // loadBatch is called in sheet order even when a later batch's connection is ready first.
        const startedBefore = previousStarted;
        let started = () => {};
        previousStarted = new Promise<void>((resolve) => {
          started = resolve;
        });
        const order = { committed: previousCommitted, startedBefore, started, lockTimeout: depth > 1 };
        const batch = commitBatch(deps, part, prepared, ctx, source, item, order);
        // Whether the batch commits or fails, the next one may start loading.
        void batch.then(started, started);
        // Awaited by the next batch (its `previousCommitted`), whose failure then says why.
        previousCommitted = observeLater(batch.then(() => undefined));
        await batches.add(batch);
      }
      await batches.drain();
    } finally {
      // On a failure or a hand-back, no transaction of this part outlives it: the batches in flight
      // commit (or roll back after the one that failed) before the part's connection is let go.
      await batches.quiesce();
    }
    // An export that stops after its header is almost always a mistake upstream (a failed query, the
    // wrong sheet), not news that nothing changed: the file fails, with or without --full. Nothing
    // was written (there was no batch).
    if (preparer.seen === 0) throw new FeedFormatError('the file has a header but no data rows');
    if (handler.staged) await succeedPart(db, part.id, source.bytesRead());
    return { current, prepared };
  } finally {
    await source.close();
  }
}

/**
 * One batch's transaction: its rows loaded (loadBatch called after the batch before it began its
 * own), its issues and counts written, and, once the batch before it has committed, the part's
 * checkpoint moved past it.
 */
function commitBatch(
  deps: RunImportDeps,
  part: ImportPart,
  prepared: PreparedFeed<unknown>,
  ctx: BatchContext,
  source: FeedSource,
  item: PreparedBatch,
  order: {
    committed: Promise<void>;
    startedBefore: Promise<void>;
    started: () => void;
    lockTimeout: boolean;
  },
): Promise<Committed> {
  const { records, rows, issues, checkpoint } = item;
  return deps.db.transaction().execute(async (trx): Promise<Committed> => {
    await order.startedBefore;
    const loading = (async () => {
      await relaxTransaction(trx, order.lockTimeout);
      const pending = prepared.loadBatch(trx, rows, { ...ctx, previousCommitted: order.committed });
      order.started();
      return pending;
    })();
    const outcome = await loading.finally(order.started);
    const all = outcome.issues ? [...issues, ...outcome.issues] : issues;
    await insertIssues(trx, ctx.runId, part.part_no, all);
    const counts = countsOf(records.length, outcome, all);
    // Commit in sheet order: the checkpoint moves past this batch only once every batch before
    // it has committed (one that failed fails this one: it rolls back, and the retry redoes both).
    await order.committed;
    return {
      outcome,
      checkpoint,
      run: await advancePart(trx, part, { ...counts, accepted: rows.length }, checkpoint, source.bytesRead()),
    };
  });
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
