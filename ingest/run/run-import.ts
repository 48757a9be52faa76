import { feedHandler } from '../feeds.js';
import { failRun, getRun, type ImportRun } from '../import-runs/import-runs.repository.js';
import { isPartDone, isSettled, partsOf } from '../import-runs/import-runs.state.js';
import type { RunImportDeps } from './deps.js';
import { loadDirect } from './direct-load.js';
import { ImportFailedError } from './errors.js';
import { withRunErrors } from './failures.js';
import { withFeedLock } from './feed-lock.js';
import { runPart } from './run-part.js';
import { settleRun } from './settle.js';

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
