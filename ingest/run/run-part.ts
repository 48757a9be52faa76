import type { Db } from '../../shared/db.js';
import type { FeedHandler, StagedFeed } from '../feed-handler.js';
import { feedHandler } from '../feeds.js';
import { getPart, restartPart } from '../import-runs/import-parts.repository.js';
import { getRun, type ImportPart, type ImportRun } from '../import-runs/import-runs.repository.js';
import { isPartDone, isSettled } from '../import-runs/import-runs.state.js';
import type { RunImportDeps } from './deps.js';
import { ImportFailedError } from './errors.js';
import { withPartErrors } from './failures.js';
import { readSource } from './read-source.js';

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
  return withPartErrors(deps, part, async () => {
    if (!handler?.staged) throw new ImportFailedError(`the ${run.feed} feed is not read in parts`, false);
    await readPart(deps, run, part, handler, handler.staged);
    return getPart(db, partId);
  });
}

/**
 * Drops a part's staged rows and starts it again from its first row (its counts come off the run,
 * restartPart), in one transaction: its staged rows were lost (a database crash empties unlogged
 * tables) or went stale.
 */
async function restartStagedPart(db: Db, staged: StagedFeed, part: ImportPart): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await staged.dropPart(trx, part.run_id, part.part_no);
    await restartPart(trx, part);
  });
}

/** Drops a part's staged rows, starts it again, and reads it again to its end (runPart). */
export async function rereadPart(deps: RunImportDeps, staged: StagedFeed, part: ImportPart): Promise<void> {
  await restartStagedPart(deps.db, staged, part);
  await runPart(deps, part.id);
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
    await restartStagedPart(db, staged, part);
    part = (await getPart(db, part.id))!;
  }
  await readSource(deps, run, part, handler);
  deps.logger?.info({ runId: run.id, part: part.part_no }, 'import part read');
}
