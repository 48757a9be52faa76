import { type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../shared/config.js';
import { type JobData, type JobName, QUEUES, type QueueName } from '../shared/queues.js';
import { createRedis } from '../shared/redis.js';

/** A queue typed by the registry: only its own job names and their payloads can be added. */
export type TypedQueue<Q extends QueueName> = Queue<JobData<JobName<Q>>, unknown, JobName<Q>>;

/**
 * Retries for transient failures (a lost connection); permanent ones throw UnrecoverableError.
 * Bounded history: the import_runs rows in Postgres are the record, Redis keeps only a tail.
 */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 5_000 },
  removeOnComplete: { count: 1_000, age: 7 * 24 * 3600 },
  removeOnFail: { count: 5_000, age: 30 * 24 * 3600 },
};

export function createQueue<Q extends QueueName>(
  name: Q,
  options: { connection: Redis; prefix: string; defaultJobOptions?: JobsOptions },
): TypedQueue<Q> {
  const queue = new Queue<JobData<JobName<Q>>, unknown, JobName<Q>>(name, {
    connection: options.connection,
    prefix: options.prefix,
    defaultJobOptions: { ...DEFAULT_JOB_OPTIONS, ...options.defaultJobOptions },
  });
  // Without a listener a Redis hiccup would be an unhandled 'error' event.
  queue.on('error', () => {});
  return queue;
}

export interface ProducerQueue<Q extends QueueName> {
  queue: TypedQueue<Q>;
  close(): Promise<void>;
}

/** A queue for a producer (CLI, API): its own connection that fails fast when Redis is away. */
export function openProducerQueue<Q extends QueueName>(
  config: Pick<Config, 'queuePrefix'>,
  redisUrl: string,
  name: Q,
): ProducerQueue<Q> {
  const connection = createRedis(redisUrl, 'producer');
  const queue = createQueue(name, { connection, prefix: config.queuePrefix });
  return {
    queue,
    async close() {
      await queue.close();
      connection.disconnect();
    },
  };
}

/** Job id of a run's import job: one job per run, however often it is enqueued. */
export const importJobId = (runId: number) => `import-run-${runId}`;

export async function enqueueImportRun(queue: TypedQueue<'import'>, runId: number): Promise<string> {
  const name: JobName<'import'> = QUEUES.import[0];
  const job = await queue.add(name, { runId }, { jobId: importJobId(runId) });
  return job.id ?? importJobId(runId);
}
