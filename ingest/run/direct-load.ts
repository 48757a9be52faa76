import { FeedFormatError } from '../../shared/errors.js';
import { feedHandler } from '../feeds.js';
import type { ImportPart, ImportRun } from '../import-runs/import-runs.repository.js';
import { succeedRun } from '../import-runs/import-runs.state.js';
import { StatsKeeper } from '../table-stats.js';
import { progressOf, type RunImportDeps } from './deps.js';
import { readSource } from './read-source.js';

/**
 * A direct-load feed's one part (a feed without a stage: the location feed), its batches written to
 * the records as they come, then the feed's finish (`--full` closing) and the run's success in one
 * transaction. The caller holds the feed's lock.
 */
export async function loadDirect(deps: RunImportDeps, run: ImportRun, part: ImportPart): Promise<ImportRun> {
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
