import { UnrecoverableError, WaitingError } from 'bullmq';
import { failRun } from '../ingest/import-runs/import-runs.repository.js';
import { type ImportProgress, progressOf } from '../ingest/run/deps.js';
import { ImportInterruptedError } from '../ingest/run/errors.js';
import { runImport } from '../ingest/run/run-import.js';
import { BizdirError } from '../shared/errors.js';
import type { ProcessorFactory } from './registry.js';

/** Progress goes to Redis at most this often; the run row in Postgres has every batch anyway. */
const PROGRESS_EVERY_MS = 500;

/**
 * `import-feed`: runs one import_runs row to its end. For a run of several sources it is the parent of
 * the import-part jobs and runs once they are done: only the merge and the run's end are left then. Thin on purpose: the work and its bookkeeping are in
 * ingest/run/; this maps failures onto BullMQ (a bad file is an UnrecoverableError, no
 * retry) and mirrors progress into the job.
 */
export const importFeedProcessor: ProcessorFactory<'import-feed'> = (deps) => async (job, token, signal) => {
  const { runId } = job.data;
  const logger = deps.logger.child({ runId, jobId: job.id });
  let lastProgress = 0;
  const onProgress = async (progress: ImportProgress) => {
    const now = Date.now();
    if (progress.status === 'running' && now - lastProgress < PROGRESS_EVERY_MS) return;
    lastProgress = now;
    await job.updateProgress({ ...progress });
  };
  try {
    const run = await runImport(
      {
        db: deps.db,
        config: deps.config,
        logger,
        onProgress,
        onBatchCommitted: deps.orgsChanged,
        ...(signal ? { signal } : {}),
      },
      runId,
    );
    return progressOf(run);
  } catch (error) {
    // Shutdown: the run stopped between batches. Back to the wait list without using up an
    // attempt; the next worker resumes it from its checkpoint.
    if (error instanceof ImportInterruptedError && token) {
      logger.info('handed back at shutdown; another worker resumes it from its checkpoint');
      await job.moveToWait(token);
      throw new WaitingError();
    }
    if (error instanceof BizdirError && !error.retryable) throw new UnrecoverableError(error.message);
    // Out of attempts: the run row must not stay "running" for ever.
    if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
      await failRun(deps.db, runId, error instanceof Error ? error.message : String(error));
    }
    throw error;
  }
};
