import { setRunJobId } from '../../ingest/import-run.js';
import { createQueue, enqueueImportRun } from '../queue.js';
import type { ProcessorFactory } from '../registry.js';
import { processRunSchedule } from './scheduler.js';

/**
 * `run-schedule`: one firing of a schedule (BullMQ job scheduler `schedule:<name>`). It decides
 * and records; the import itself is the ordinary `import-feed` job of an ordinary run row.
 */
export const runScheduleProcessor: ProcessorFactory<'run-schedule'> = (deps) => {
  // Shares the worker's connection: enqueueing from inside a job must wait for Redis, not fail.
  const importQueue = createQueue('import', { connection: deps.connection, prefix: deps.config.queuePrefix });
  return async (job) => {
    const log = deps.logger.child({ schedule: job.data.schedule, jobId: job.id });
    return processRunSchedule(
      {
        db: deps.db,
        log,
        enqueueImport: async (runId) => {
          const jobId = await enqueueImportRun(importQueue, runId);
          await setRunJobId(deps.db, runId, jobId);
          return jobId;
        },
      },
      job,
    );
  };
};
