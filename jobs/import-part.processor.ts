import { UnrecoverableError, WaitingError } from 'bullmq';
import { failPart } from '../ingest/import-runs/import-parts.repository.js';

import { ImportInterruptedError } from '../ingest/run/errors.js';
import { runPart } from '../ingest/run/run-part.js';
import { BizdirError } from '../shared/errors.js';
import type { ProcessorFactory } from './registry.js';

/**
 * `import-part`: reads one source of a run of several into the run's staging area (ingest/run/
 * run-part.ts runPart). Thin like import-feed: a bad source is an UnrecoverableError (the part is
 * failed; the run's own job then merges what the other parts loaded and fails the run), a shutdown
 * hands the part back at its checkpoint.
 */
export const importPartProcessor: ProcessorFactory<'import-part'> = (deps) => async (job, token, signal) => {
  const { runId, partId } = job.data;
  const logger = deps.logger.child({ runId, partId, jobId: job.id });
  try {
    const part = await runPart(
      { db: deps.db, config: deps.config, logger, ...(signal ? { signal } : {}) },
      partId,
    );
    return part ? { runId, partNo: part.part_no, status: part.status, rowsRead: part.rows_read } : null;
  } catch (error) {
    if (error instanceof ImportInterruptedError && token) {
      logger.info('part handed back at shutdown; another worker resumes it from its checkpoint');
      await job.moveToWait(token);
      throw new WaitingError();
    }
    if (error instanceof BizdirError && !error.retryable) throw new UnrecoverableError(error.message);
    // Out of attempts: the part must not stay "running" for ever (the run then fails).
    if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
      await failPart(deps.db, partId, error instanceof Error ? error.message : String(error));
    }
    throw error;
  }
};
