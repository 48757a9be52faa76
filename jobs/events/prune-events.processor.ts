import { pruneEvents } from '../../events/retention.repository.js';
import type { JobName } from '../../shared/queues.js';
import { createQueue } from '../queue.js';
import type { ProcessorFactory } from '../registry.js';

export const PRUNE_EVENTS_JOB: JobName<'events'> = 'prune-events';

/** How often the feed is pruned: events are kept for days, so an hour late costs nothing. */
export const PRUNE_EVERY_MS = 3_600_000;

/**
 * `prune-events`: deletes the change feed's events older than EVENTS_RETENTION_DAYS, in bounded
 * batches (events/retention.repository.ts). Repeats every hour: the scheduler is upserted
 * when a worker for the `events` queue starts (idempotent across workers, as the index sweep's is),
 * so a Redis flush loses it only until the next worker start.
 */
export const pruneEventsProcessor: ProcessorFactory<'prune-events'> = (deps) => {
  const queue = createQueue('events', { connection: deps.connection, prefix: deps.config.queuePrefix });
  queue
    .upsertJobScheduler(
      PRUNE_EVENTS_JOB,
      { every: PRUNE_EVERY_MS },
      { name: PRUNE_EVENTS_JOB, data: {}, opts: { removeOnComplete: 100, removeOnFail: 100 } },
    )
    .catch((err: Error) => deps.logger.warn({ err: err.message }, 'event pruning not scheduled'));
  return async (_job, _token, signal) => {
    const outcome = await pruneEvents(deps.db, {
      retentionDays: deps.config.eventsRetentionDays,
      ...(signal ? { signal } : {}),
    });
    if (outcome.deleted > 0)
      deps.logger.info({ ...outcome, retentionDays: deps.config.eventsRetentionDays }, 'old events deleted');
    return outcome;
  };
};
