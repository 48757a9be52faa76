import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { failPart } from '../ingest/import-runs/import-parts.repository.js';
import { failRun } from '../ingest/import-runs/import-runs.repository.js';
import { IMPORT_JOB_CONNECTIONS } from '../ingest/run/deps.js';
import { INDEX_JOB_CONNECTIONS } from '../search/index-sync.repository.js';
import { meiliReplicasOf } from '../search/replicas.js';
import type { Config } from '../shared/config.js';
import type { Db } from '../shared/db.js';
import type { Logger } from '../shared/logger.js';
import { isConnectionError, outageOf, reportConnectionError } from '../shared/outage.js';
import type { QueueName } from '../shared/queues.js';
import { closeWebhookRuntime } from './deliver-webhooks.processor.js';
import { startIndexOnChange } from './index-on-change.js';
import { indexOrgsNotifier } from './index-orgs.processor.js';
import { queueProcessor, registeredQueues, type WorkerDeps } from './registry.js';
import { startScheduleReconciler } from './schedules/reconciler.js';
import { settleReindexRun } from './schedules/reindex-runs.repository.js';
import { startWebhookSweep } from './webhooks-sweep.js';

export interface WorkerOptions {
  /** Queues to run; default every queue with processors registered. */
  queues?: QueueName[];
  concurrency?: number;
  /** How long a job's lock lives without renewal; a dead worker's job is retried after it. */
  lockDuration?: number;
  /** How often stalled jobs (of dead workers) are looked for. */
  stalledInterval?: number;
}

export interface RunningWorkers {
  queues: QueueName[];
  workers: { close(force?: boolean): Promise<void> }[];
  /**
   * Lets running jobs finish for up to `timeoutMs` (their abort signals asked them to stop);
   * 'timeout' when some job was still running at the deadline: it is left running, and the caller
   * exits (its lock lapses and another worker retries it).
   */
  close(timeoutMs?: number): Promise<'closed' | 'timeout'>;
}

const CONNECTIONS_PER_JOB: Record<QueueName, number> = {
  import: IMPORT_JOB_CONNECTIONS,
  index: INDEX_JOB_CONNECTIONS,
  // One statement at a time (events/retention.repository.ts).
  events: 1,
  webhooks: 0,
};

/**
 * Connections a queue's jobs share whatever their number: a webhook job holds a connection only for
 * the length of one statement (never while it waits for a receiver), so its many concurrent jobs
 * queue briefly for a few connections instead of taking one each.
 */
const SHARED_CONNECTIONS: Partial<Record<QueueName, number>> = { webhooks: 4 };

/**
 * Jobs at once of a queue whose own setting wins over --concurrency (webhooks: WEBHOOKS_CONCURRENCY).
 * With several Meilisearch replicas the index queue runs two jobs at least: a job waiting on a
 * replica that hangs must not keep the next job from syncing the others (each replica has its own
 * lock, so the second job skips the one still held).
 */
function queueConcurrency(queue: QueueName, config: Config, concurrency: number | undefined): number {
  if (queue === 'webhooks') return config.webhooksConcurrency;
  if (queue === 'index') return indexConcurrency(concurrency ?? 1, meiliReplicasOf(config).length);
  return concurrency ?? 1;
}

const indexConcurrency = (concurrency: number, replicas: number) =>
  replicas > 1 ? Math.max(2, concurrency) : concurrency;

/**
 * The Postgres pool a worker process needs: each queue it runs takes `concurrency` jobs at once, and
 * each job can hold CONNECTIONS_PER_JOB connections at once (session locks held for a whole run
 * included); one more for the schedule reconciler and the index sweep. With fewer, a re-import and
 * the index sync beside it can take every connection and wait for one more (docs/scaling.md).
 */
export function workerPoolSize(
  concurrency: number,
  queues: readonly QueueName[] = registeredQueues(),
  replicas = 1,
): number {
  // An index job works on every replica at once, each with its lock's connection and one more.
  const perJob = (queue: QueueName) =>
    queue === 'index'
      ? indexConcurrency(concurrency, replicas) * CONNECTIONS_PER_JOB.index * replicas
      : concurrency * CONNECTIONS_PER_JOB[queue];
  return 1 + queues.reduce((sum, queue) => sum + (SHARED_CONNECTIONS[queue] ?? 0) + perJob(queue), 0);
}

export function createWorkerDeps(config: Config, db: Db, connection: Redis, logger: Logger): WorkerDeps {
  return {
    config,
    db,
    connection,
    logger,
    orgsChanged: indexOrgsNotifier(config, connection),
  };
}

/**
 * Starts one BullMQ worker per queue. Throws before taking any job when a queue lacks a processor.
 */
export function startWorkers(deps: WorkerDeps, options: WorkerOptions = {}): RunningWorkers {
  const queues = options.queues ?? registeredQueues();
  // Build every processor first: a missing one refuses the whole start, before any job is taken.
  const processors = queues.map((q) => [q, queueProcessor(q, deps)] as const);
  const workers = processors.map(([queue, processor]) => {
    const worker = new Worker(queue, processor, {
      connection: deps.connection,
      prefix: deps.config.queuePrefix,
      concurrency: queueConcurrency(queue, deps.config, options.concurrency),
      lockDuration: options.lockDuration ?? 60_000,
      stalledInterval: options.stalledInterval ?? 30_000,
      maxStalledCount: 2,
    });
    const log = deps.logger.child({ queue });
    worker.on('error', (err) => {
      // A lost Redis connection: the connection's outage, logged once with its recovery.
      if (isConnectionError(err)) outageOf(deps.connection, 'Redis').down(err);
      else log.error({ err }, 'worker error');
    });
    worker.on('stalled', (jobId) => log.warn({ jobId }, 'job stalled; it will be retried'));
    worker.on('completed', (job, result) => {
      // The index sweep runs every few seconds and usually finds nothing: that is debug, not info.
      const idle = (result as { batches?: number } | undefined)?.batches === 0;
      log[idle ? 'debug' : 'info']({ jobId: job.id, name: job.name }, 'job completed');
    });
    worker.on('failed', (job, err) => {
      // A job that failed because a service is away (the index sweep, every second, while
      // Meilisearch or Postgres is down) is part of an outage, logged once by its tracker.
      const outage = reportConnectionError(err, { postgres: deps.db, redis: deps.connection });
      log[outage ? 'debug' : 'warn']({ jobId: job?.id, name: job?.name, err: err.message }, 'job failed');
      // A job that failed for good without its processor seeing it (e.g. stalled too often).
      if (job?.finishedOn && job.name === 'import-feed') {
        const { runId } = job.data as { runId: number };
        failRun(deps.db, runId, err.message).catch((e: unknown) =>
          log.error({ runId, err: e }, 'could not mark the run failed; it stays as it was'),
        );
      }
      // A scheduled rebuild that stalled out: its run must not stay "running" for ever.
      const scheduleRun = (job?.data as { scheduleRun?: number } | undefined)?.scheduleRun;
      if (job?.finishedOn && job.name === 'index-orgs' && scheduleRun !== undefined) {
        settleReindexRun(deps.db, scheduleRun, { status: 'failed', reason: err.message }).catch(
          (e: unknown) =>
            log.error(
              { scheduleRun, err: e },
              'could not mark the scheduled reindex failed; it stays as it was',
            ),
        );
      }
      if (job?.finishedOn && job.name === 'import-part') {
        const { partId } = job.data as { partId: number };
        failPart(deps.db, partId, err.message).catch((e: unknown) =>
          log.error({ partId, err: e }, 'could not mark the import part failed; it stays as it was'),
        );
      }
    });
    return worker;
  });
  deps.logger.info({ queues }, 'workers started');
  // Schedules: Postgres holds them; the workers that run the import queue re-create BullMQ's job
  // schedulers from it at start and every minute, so a Redis flush loses none.
  const reconciler = queues.includes('import') ? startScheduleReconciler(deps) : undefined;
  // The workers that index learn of every committed change at once (not only at the next sweep).
  const indexOnChange = queues.includes('index') ? startIndexOnChange(deps) : undefined;
  // The workers that deliver webhooks find the endpoints behind the feed: at start and every second.
  const webhookSweep = queues.includes('webhooks') ? startWebhookSweep(deps) : undefined;
  return {
    queues,
    workers,
    /**
     * 'closed' when every job ended within `timeoutMs`; 'timeout' when some did not: they are left
     * running, and may hold pooled connections, so the caller must not wait for the pool to drain
     * without a bound.
     */
    async close(timeoutMs = 30_000): Promise<'closed' | 'timeout'> {
      await reconciler?.stop();
      await indexOnChange?.stop();
      await webhookSweep?.stop();
      // Shutdown: aborts the processors' signals, so an import stops after the batch it is
      // committing and hands its job back instead of running to the end of the file.
      for (const w of workers) w.cancelAllJobs('worker shutting down');
      let timer: NodeJS.Timeout | undefined;
      const graceful = Promise.all(workers.map((w) => w.close()));
      const deadline = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
      });
      const outcome = await Promise.race([graceful.then(() => 'closed' as const), deadline]);
      clearTimeout(timer);
      // Connections to webhook receivers: after the jobs, which may still be sending.
      if (outcome === 'closed') await closeWebhookRuntime(deps);
      if (outcome === 'timeout') {
        // Not `close(true)`: BullMQ answers a second close with the first one's promise, which waits
        // for the jobs. The caller exits instead (bin/commands/worker.ts); the jobs' locks then lapse
        // and another worker retries them.
        deps.logger.warn({ timeoutMs }, 'jobs still running at the shutdown deadline; leaving them');
      }
      return outcome;
    },
  };
}
