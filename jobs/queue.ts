import { FlowProducer, type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../shared/config.js';
import { outageOf } from '../shared/outage.js';
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
  // A Redis hiccup is its connection's outage (logged once where a process watches it); without a
  // listener it would be an unhandled 'error' event.
  queue.on('error', (err) => outageOf(options.connection, 'Redis').down(err));
  return queue;
}

export interface ProducerQueue<Q extends QueueName> {
  queue: TypedQueue<Q>;
  /** Adds a parent job with its children (a run of several sources). */
  flows: FlowProducer;
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
  const flows = createFlowProducer(connection, config.queuePrefix);
  return {
    queue,
    flows,
    async close() {
      await flows.close();
      await queue.close();
      connection.disconnect();
    },
  };
}

export function createFlowProducer(connection: Redis, prefix: string): FlowProducer {
  const flows = new FlowProducer({ connection, prefix });
  flows.on('error', (err) => outageOf(connection, 'Redis').down(err));
  return flows;
}

/** Job id of a run's import job: one job per run, however often it is enqueued. */
export const importJobId = (runId: number) => `import-run-${runId}`;

export async function enqueueImportRun(queue: TypedQueue<'import'>, runId: number): Promise<string> {
  const name: JobName<'import'> = QUEUES.import[0];
  const job = await queue.add(name, { runId }, { jobId: importJobId(runId) });
  return job.id ?? importJobId(runId);
}

export const importPartJobId = (runId: number, partNo: number) => `import-run-${runId}-part-${partNo}`;

/**
 * A run of several sources: one import-part job per source (any worker takes any of them, in
 * parallel) under the run's import-feed job, which BullMQ runs once every part job is done. A part
 * that fails for good does not hold the run up (ignoreDependencyOnFailure): the run's job still
 * runs, merges what loaded and fails the run. Returns the run's job id and each part's.
 */
export async function enqueueImportParts(
  flows: FlowProducer,
  runId: number,
  parts: readonly { id: number; part_no: number }[],
): Promise<{ jobId: string; partJobIds: Map<number, string> }> {
  const queueName: QueueName = 'import';
  const partJob: JobName<'import'> = 'import-part';
  const runJob: JobName<'import'> = 'import-feed';
  const partJobIds = new Map(parts.map((p) => [p.part_no, importPartJobId(runId, p.part_no)]));
  const node = await flows.add({
    name: runJob,
    queueName,
    data: { runId },
    opts: { ...DEFAULT_JOB_OPTIONS, jobId: importJobId(runId) },
    children: parts.map((p) => ({
      name: partJob,
      queueName,
      data: { runId, partId: p.id },
      opts: { ...DEFAULT_JOB_OPTIONS, jobId: partJobIds.get(p.part_no)!, ignoreDependencyOnFailure: true },
    })),
  });
  return { jobId: node.job.id ?? importJobId(runId), partJobIds };
}
