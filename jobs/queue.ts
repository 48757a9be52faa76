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

/** Redis could not be reached, or did not answer in time, when a producer needed it. */
export class RedisUnreachableError extends Error {
  override name = 'RedisUnreachableError';
}

/** How long a producer waits for Redis to answer one call before giving up. */
export const PRODUCER_CALL_MS = 15_000;

/**
 * A producer's call to BullMQ, bounded: BullMQ waits for its connection to be ready for as long as
 * the client keeps reconnecting, so an unreachable Redis would otherwise hang the caller.
 */
export async function producerCall<T>(what: string, call: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new RedisUnreachableError(`Redis did not answer within ${PRODUCER_CALL_MS / 1000} s (${what})`),
        ),
      PRODUCER_CALL_MS,
    );
  });
  try {
    return await Promise.race([call, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A queue for a producer (the CLI): its own connection, made before anything else, so that a Redis
 * that is away fails the command at once with RedisUnreachableError (BullMQ itself would wait for it
 * forever). The caller closes it.
 */
export async function openProducerQueue<Q extends QueueName>(
  config: Pick<Config, 'queuePrefix'>,
  redisUrl: string,
  name: Q,
): Promise<ProducerQueue<Q>> {
  // No retries until the first connection is made (the command fails at once), then ioredis's own.
  let connected = false;
  const connection = createRedis(redisUrl, 'producer', {
    lazyConnect: true,
    retryStrategy: (times) => (connected ? Math.min(times * 200, 2_000) : null),
  });
  connection.once('ready', () => {
    connected = true;
  });
  // The socket's own error (ECONNREFUSED, ENOTFOUND, a timeout) says more than ioredis's "Connection is closed."
  let lastError: Error | undefined;
  const remember = (err: Error) => {
    lastError = err;
  };
  connection.on('error', remember);
  try {
    await connection.connect();
    connection.off('error', remember);
  } catch (error) {
    connection.disconnect();
    const reason = (lastError ?? (error as Error)).message || 'connection refused';
    throw new RedisUnreachableError(
      `cannot reach Redis (${reason}); is it running, and is REDIS_URL right?`,
      {
        cause: error,
      },
    );
  }
  const queue = createQueue(name, { connection, prefix: config.queuePrefix });
  const flows = createFlowProducer(connection, config.queuePrefix);
  return {
    queue,
    flows,
    async close() {
      // A connection lost meanwhile is dropped first: BullMQ's close would wait for it to come back.
      if (connection.status !== 'ready') connection.disconnect();
      await producerCall('closing the queue', Promise.all([flows.close(), queue.close()])).catch(
        () => undefined,
      );
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
