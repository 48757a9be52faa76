import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../shared/config.js';
import type { Db } from '../shared/db.js';
import type { Logger } from '../shared/logger.js';
import { type JobData, type JobName, QUEUE_NAMES, QUEUES, type QueueName } from '../shared/queues.js';
import { deliverWebhooksProcessor } from './deliver-webhooks.processor.js';
import { pruneEventsProcessor } from './events/prune-events.processor.js';
import { importFeedProcessor } from './import-feed.processor.js';
import { importPartProcessor } from './import-part.processor.js';
import { indexOrgsProcessor } from './index-orgs.processor.js';
import { runScheduleProcessor } from './schedules/run-schedule.processor.js';

/** What processors get from the worker process. */
export interface WorkerDeps {
  db: Db;
  logger: Logger;
  config: Config;
  /** The worker's Redis connection (maxRetriesPerRequest: null), for processors that enqueue. */
  connection: Redis;
  /**
   * Called after every committed import batch with the Orgs whose content changed; createWorkerDeps
   * (jobs/worker.ts) makes it enqueue `index-orgs`.
   */
  orgsChanged(orgIds: number[]): Promise<void>;
}

/** BullMQ's processor signature: the lock token and an abort signal (aborted on shutdown) included. */
export type JobProcessor<N extends JobName> = (
  job: Job<JobData<N>, unknown, N>,
  token: string | undefined,
  signal: AbortSignal | undefined,
) => Promise<unknown>;
export type ProcessorFactory<N extends JobName> = (deps: WorkerDeps) => JobProcessor<N>;

type Registry = { [Q in QueueName]?: { [N in JobName<Q>]?: ProcessorFactory<N> } };

/**
 * The processors, by queue and job name. A worker runs the queues asked for (default: every queue
 * listed here) and refuses to start when a job name of one of them has no processor.
 *
 * A new job name on a queue (shared/queues.ts) needs its processor here too.
 */
export const PROCESSORS: Registry = {
  import: {
    'import-feed': importFeedProcessor,
    'import-part': importPartProcessor,
    'run-schedule': runScheduleProcessor,
  },
  index: { 'index-orgs': indexOrgsProcessor },
  events: { 'prune-events': pruneEventsProcessor },
  webhooks: { 'deliver-webhooks': deliverWebhooksProcessor },
};

export class MissingProcessorError extends Error {
  override name = 'MissingProcessorError';
}

/** Queues with processors registered: what `bizdir worker` runs by default. */
export const registeredQueues = (): QueueName[] => QUEUE_NAMES.filter((q) => PROCESSORS[q] !== undefined);

/**
 * One processor for a queue, dispatching on the job name. Throws MissingProcessorError when a job
 * name of the queue has none, so a worker never takes jobs it cannot run.
 */
export function queueProcessor<Q extends QueueName>(queue: Q, deps: WorkerDeps) {
  const table = (PROCESSORS[queue] ?? {}) as Record<string, ProcessorFactory<JobName> | undefined>;
  const names: readonly string[] = QUEUES[queue];
  const missing = names.filter((n) => table[n] === undefined);
  if (missing.length > 0) {
    throw new MissingProcessorError(`queue "${queue}" has no processor for job ${missing.join(', ')}`);
  }
  const byName = new Map(names.map((n) => [n, table[n]!(deps)] as const));
  // Three declared parameters: BullMQ hands a processor an abort signal only when its arity says so.
  return async (
    job: Job<JobData<JobName<Q>>, unknown, JobName<Q>>,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ) => {
    const run = byName.get(job.name);
    if (!run) throw new MissingProcessorError(`no processor for job "${job.name}" on queue "${queue}"`);
    return run(job as unknown as Job<JobData<JobName>, unknown, JobName>, token, signal);
  };
}
