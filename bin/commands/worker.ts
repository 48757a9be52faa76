import v8 from 'node:v8';
import type { Command } from 'commander';
import { createWorkerDeps, startWorkers, workerPoolSize } from '../../jobs/worker.js';
import { meiliReplicasOf } from '../../search/replicas.js';
import { createDb } from '../../shared/db.js';
import { createLogger } from '../../shared/logger.js';
import { reportPgOutages, reportRedisOutages } from '../../shared/outage.js';
import { QUEUE_NAMES, type QueueName } from '../../shared/queues.js';
import { createRedis } from '../../shared/redis.js';
import { CliError, databaseUrlOf, redisUrlOf, resolvedConfig } from '../cli-context.js';

/**
 * How far V8 lets a worker's heap grow past what the last full collection kept, in percent. V8's own
 * factor (up to 4x) let an import's heaps grow to several times their live data before collecting,
 * and the worker's peak RSS with them; bounded at 50 % the same import peaked far lower and ran as
 * fast (docs/imports.md, Workers; docs/journal/2026-11-26.md, 19:39). A `--heap-growing-percent`
 * given to node itself wins.
 */
const HEAP_GROWING_PERCENT = 50;

/** Whether node was started with its own `--heap-growing-percent` (which the worker then keeps). */
export function heapGrowthGivenToNode(execArgv: readonly string[]): boolean {
  return execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg));
}

function boundHeapGrowth(): void {
  if (heapGrowthGivenToNode(process.execArgv)) return;
  // A V8 flag set at run time: read each time V8 sizes the heap after a collection, in this thread and
  // the threads started later (the register's preparing thread).
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}

/** After the shutdown deadline, how long the pool may take to give its connections back. */
const POOL_DRAIN_MS = 5_000;

interface WorkerCliOptions {
  queues?: string;
  concurrency: number;
  lockDuration: number;
  stalledInterval: number;
  shutdownTimeout: number;
}

const ms = (name: string) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new CliError(`${name} must be a positive integer`);
  return Number(value);
};

function parseQueues(value: string | undefined): QueueName[] | undefined {
  if (value === undefined) return undefined;
  const names = value
    .split(',')
    .map((q) => q.trim())
    .filter(Boolean);
  const unknown = names.filter((q) => !(QUEUE_NAMES as string[]).includes(q));
  if (unknown.length > 0)
    throw new CliError(`unknown queue ${unknown.join(', ')} (known: ${QUEUE_NAMES.join(', ')})`);
  // A worker of no queue would start and idle for ever.
  if (names.length === 0) throw new CliError(`--queues names no queue (known: ${QUEUE_NAMES.join(', ')})`);
  return names as QueueName[];
}

/** `bizdir worker`: runs the queue workers until SIGTERM/SIGINT, then shuts down under a deadline. */
export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('run the queue workers (imports, search indexing) until stopped')
    .option(
      '--queues <names>',
      `comma-separated queues (default: every queue with processors; ${QUEUE_NAMES.join(', ')})`,
    )
    .option('--concurrency <n>', 'jobs at once per queue', ms('--concurrency'), 1)
    .option(
      '--lock-duration <ms>',
      'job lock lifetime; a dead worker’s job is retried after it',
      ms('--lock-duration'),
      60_000,
    )
    .option(
      '--stalled-interval <ms>',
      'how often jobs of dead workers are looked for',
      ms('--stalled-interval'),
      30_000,
    )
    .option(
      '--shutdown-timeout <ms>',
      'how long running jobs may finish on SIGTERM',
      ms('--shutdown-timeout'),
      30_000,
    )
    .action(async (opts: WorkerCliOptions) => {
      // Every service URL resolved once (a running `bizdir start`'s embedded services included), so
      // the pool, the processors' Meilisearch client and the change listener reach the same services.
      const config = resolvedConfig();
      const queues = parseQueues(opts.queues);
      boundHeapGrowth();
      const logger = createLogger(config, { role: 'worker' });
      const dbHandle = createDb(databaseUrlOf(config), {
        max: workerPoolSize(opts.concurrency, queues, meiliReplicasOf(config).length),
        applicationName: 'bizdir-worker',
      });
      const connection = createRedis(redisUrlOf(config), 'worker');
      // Outages of either are logged once each, with their end (the clients reconnect by themselves).
      reportPgOutages(logger, dbHandle.pool);
      reportRedisOutages(logger, connection);
      const deps = createWorkerDeps(config, dbHandle.db, connection, logger);
      let running: ReturnType<typeof startWorkers>;
      try {
        running = startWorkers(deps, {
          ...(queues ? { queues } : {}),
          concurrency: opts.concurrency,
          lockDuration: opts.lockDuration,
          stalledInterval: opts.stalledInterval,
        });
      } catch (error) {
        connection.disconnect();
        await dbHandle.close();
        throw new CliError((error as Error).message);
      }
      process.stderr.write(`bizdir worker: running queues ${running.queues.join(', ')}\n`);
      const outcome = await new Promise<'closed' | 'timeout'>((resolve) => {
        let stopping = false;
        const stop = (signal: string) => {
          if (stopping) return;
          stopping = true;
          logger.info({ signal }, 'shutting down');
          running.close(opts.shutdownTimeout).then(resolve, (err: unknown) => {
            logger.error({ err }, 'error while closing workers');
            resolve('timeout');
          });
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
      // A job still running past the deadline may hold pooled connections for as long as it runs:
      // the pool is given a moment, then the process exits anyway (its jobs' locks lapse and another
      // worker retries them; an import resumes from its checkpoint).
      const drained = await Promise.race([
        dbHandle.close().then(() => true),
        new Promise<false>((resolve) => setTimeout(resolve, POOL_DRAIN_MS, false).unref()),
      ]);
      await connection.quit().catch(() => connection.disconnect());
      if (outcome === 'timeout' || !drained) {
        process.stderr.write('bizdir worker: stopped with jobs still running (they will be retried)\n');
        process.exit(1);
      }
      process.stderr.write('bizdir worker: stopped\n');
    });
}
