import { FeedFormatError } from '../../shared/errors.js';
import { ignoreError } from '../../shared/outage.js';
import type { BatchContext, StagedFeed } from '../feed-handler.js';
import { feedHandler } from '../feeds.js';
import {
  addRunCounts,
  failRun,
  getRun,
  type ImportRun,
  startRun,
} from '../import-runs/import-runs.repository.js';
import {
  isPartDone,
  isSettled,
  partLocation,
  partsOf,
  succeedRun,
} from '../import-runs/import-runs.state.js';
import { progressOf, type RunImportDeps } from './deps.js';
import { ImportFailedError } from './errors.js';
import { withRunErrors } from './failures.js';
import { withFeedLock } from './feed-lock.js';
import { mergeRereading } from './merge.js';
import { runImport } from './run-import.js';
import { rereadPart, runPart } from './run-part.js';

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
      await readLeftParts(deps, fresh, staged);
      const parts = await partsOf(db, fresh);
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
      const merged = await mergeRereading(deps, fresh, staged, ctx);
      const current = await finish(deps, staged, ctx, merged, accepted, failed.length === 0);
      if (failed.length > 0) {
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
 * Reads what the parts' own jobs left: the parts whose jobs are gone (a flushed queue, a job that
 * stalled out), and the parts whose staged rows were lost since they were read (a database crash
 * empties the unlogged staging table), or the merge would miss them and `--full` would mark their
 * companies as gone.
 */
async function readLeftParts(deps: RunImportDeps, run: ImportRun, staged: StagedFeed): Promise<void> {
  const { db } = deps;
  const runId = run.id;
  for (const part of await partsOf(db, run)) {
    if (isPartDone(part.status)) continue;
    // runPart records and logs a part's failure; the merge judges the run by the parts' rows.
    await runPart(deps, part.id).catch(
      ignoreError(`part ${part.part_no} of run ${runId} failed; its row says so`, deps.logger),
    );
  }
  await staged.open(db, runId);
  // One pass over the stage for every part's count (a count per part was a scan of the whole stage each).
  const counts = await staged.stagedRowsByPart(db, runId);
  for (const part of await partsOf(db, run)) {
    if (part.status !== 'succeeded') continue;
    if ((counts.get(part.part_no) ?? 0) === Number(part.accepted)) continue;
    deps.logger?.warn({ runId, part: part.part_no }, 'staged rows lost; reading the part again');
    await rereadPart(deps, staged, part);
  }
}

/**
 * The feed's finish (`--full` marking when every part was read) and the run's last counts, in one
 * transaction; the run succeeds in it when `complete`. Returns the run as it then is.
 */
async function finish(
  deps: RunImportDeps,
  staged: StagedFeed,
  ctx: BatchContext,
  merged: ImportRun,
  accepted: number,
  complete: boolean,
): Promise<ImportRun> {
  const { db } = deps;
  const finished = await db
    .transaction()
    .execute(async (trx) => {
      const outcome = await staged.finish(trx, ctx, complete);
      // Every accepted row that did not win its key was a duplicate (counted once, at the end).
      const duplicates = accepted - Number(merged.merged_rows) - Number(merged.duplicates);
      await addRunCounts(trx, ctx.runId, { duplicates });
      return { outcome, run: complete ? await succeedRun(trx, ctx.runId, outcome.closed) : merged };
    })
    .catch(async (error: unknown) => {
      // Refused by the feed (too many marked as gone): the run fails for good, its stage goes.
      if (error instanceof FeedFormatError) await staged.discard(db, ctx.runId);
      throw error;
    });
  if (finished.outcome.changedOrgIds.length > 0)
    await deps.onBatchCommitted?.(finished.outcome.changedOrgIds);
  return finished.run;
}
