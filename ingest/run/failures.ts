import { reasonOf } from '../../shared/outage.js';
import { failPart } from '../import-runs/import-parts.repository.js';
import {
  failRun,
  type ImportPart,
  type ImportRun,
  noteRunRetry,
} from '../import-runs/import-runs.repository.js';
import { notePartRetry } from '../import-runs/import-runs.state.js';
import type { RunImportDeps } from './deps.js';
import { failureOf, type ImportFailedError, ImportInterruptedError } from './errors.js';

/**
 * Runs a step and records its failure where it belongs: one that is not retryable fails the run or
 * the part for good; a passing one is noted for the retry (statuses unchanged). Either way the failure
 * is logged and thrown, classified (ImportFailedError). A hand-back at shutdown is not a failure:
 * nothing is recorded, the rows already say where the step stopped.
 */
async function recordingFailure<T>(
  fn: () => Promise<T>,
  target: {
    fail: (message: string) => Promise<void>;
    noteRetry: (message: string) => Promise<void>;
    log: (failure: ImportFailedError) => void;
    noteFailed: (err: unknown) => void;
  },
): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof ImportInterruptedError) throw error;
    const failure = failureOf(error);
    if (!failure.retryable) await target.fail(failure.message);
    else await target.noteRetry(failure.message).catch(target.noteFailed);
    target.log(failure);
    throw failure;
  }
}

/** A run-level step (a direct load, the merge and finish): its failure is the run's. */
export function withRunErrors(
  deps: RunImportDeps,
  runId: number,
  fn: () => Promise<ImportRun>,
): Promise<ImportRun> {
  return recordingFailure(fn, {
    fail: async (message) => {
      await failRun(deps.db, runId, message);
    },
    noteRetry: (message) => noteRunRetry(deps.db, runId, message),
    noteFailed: (err) =>
      deps.logger?.warn({ runId, err: reasonOf(err) }, 'could not note the retry on the run'),
    log: (failure) =>
      deps.logger?.warn(
        { runId, err: failure.message, permanent: !failure.retryable },
        'import attempt failed',
      ),
  });
}

/** Reading one part of a staged run: its failure is the part's (the run fails when it settles). */
export function withPartErrors<T>(deps: RunImportDeps, part: ImportPart, fn: () => Promise<T>): Promise<T> {
  const where = { runId: part.run_id, part: part.part_no };
  return recordingFailure(fn, {
    fail: (message) => failPart(deps.db, part.id, message),
    noteRetry: (message) => notePartRetry(deps.db, part, message),
    noteFailed: (err) =>
      deps.logger?.warn({ ...where, err: reasonOf(err) }, 'could not note the retry on the part'),
    log: (failure) =>
      deps.logger?.warn(
        { ...where, err: failure.message, permanent: !failure.retryable },
        'import part failed',
      ),
  });
}
