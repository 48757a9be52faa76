import type { ChildProcess } from 'node:child_process';
import type { Redis } from 'ioredis';
import { getRun, type ImportRun } from '../../ingest/import-runs/import-runs.repository.js';
import type { WorkerDeps } from '../../jobs/registry.js';
import { createWorkerDeps } from '../../jobs/worker.js';
import { loadConfig } from '../../shared/config.js';
import type { Db } from '../../shared/db.js';
import { createLogger } from '../../shared/logger.js';
import { spawnCli } from './cli.js';
import { createTestDb, type TestDb } from './db.js';
import { TEST_REDIS_URL } from './env.js';
import { testQueuePrefix } from './redis.js';
import { eventually } from './wait.js';

/** Short lock and stall settings, so a killed worker's job is taken over by another within seconds. */
export const QUICK_TAKEOVER = ['--lock-duration', '2000', '--stalled-interval', '1000'];

/**
 * The `bizdir worker` processes one test file starts through the real CLI. `stopAll` (in afterAll)
 * kills whichever are still running, so a failed test leaves no worker behind.
 */
export class WorkerProcesses {
  private readonly started: ChildProcess[] = [];

  /** `env` is read at each start: test files set theirs up in beforeAll. */
  constructor(private readonly env: () => Record<string, string>) {}

  /** Starts `bizdir worker` with `args` (default: QUICK_TAKEOVER) and, when given, more environment. */
  start(args: string[] = QUICK_TAKEOVER, env: Record<string, string> = {}): ChildProcess {
    const child = spawnCli(['worker', ...args], { ...this.env(), ...env });
    this.started.push(child);
    return child;
  }

  /** Sends `signal` and resolves with the exit code once the process has exited (null if a signal ended it). */
  stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill(signal);
    return exited;
  }

  async stopAll(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    for (const child of this.started) await this.stop(child, signal);
  }
}

/**
 * Polls the import run until `reached` holds for it (workers in other processes carry it), and
 * returns it; throws with the last state seen once `timeoutMs` has passed.
 */
export async function waitForRun(
  db: Db,
  id: number,
  reached: (run: ImportRun) => boolean,
  { timeoutMs = 120_000, pollMs = 25 } = {},
): Promise<ImportRun> {
  const run = await eventually(
    () => getRun(db, id),
    (r) => r !== undefined && reached(r),
    { timeoutMs, pollMs },
  );
  if (!run || !reached(run)) throw new Error(`run ${id} did not get there: ${JSON.stringify(run)}`);
  return run;
}

export type TestQueue = ReturnType<typeof testQueuePrefix>;

/** A test file's own database and queue prefix, and the environment that points `bizdir` at them. */
export interface CliServices {
  t: TestDb;
  queue: TestQueue;
  env: Record<string, string>;
}

/** Creates CliServices (in beforeAll), with `extraEnv` added to the environment. */
export async function openCliServices(extraEnv: Record<string, string> = {}): Promise<CliServices> {
  const t = await createTestDb();
  const queue = testQueuePrefix();
  return {
    t,
    queue,
    env: { DATABASE_URL: t.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: queue.prefix, ...extraEnv },
  };
}

/** In afterAll: stops the workers still running (`signal`), then drops the queue's keys and the database. */
export async function closeCliServices(
  services: Partial<CliServices>,
  workers: WorkerProcesses,
  signal: NodeJS.Signals = 'SIGKILL',
): Promise<void> {
  await workers.stopAll(signal);
  await services.queue?.cleanup();
  await services.t?.drop();
}

/**
 * Deps for workers run inside the test's own process (startWorkers, a processor called by hand): the
 * test's database and queue prefix, logs silent, `env` added to the configuration.
 */
export function inProcessWorkerDeps(
  t: TestDb,
  queuePrefix: string,
  connection: Redis,
  env: Record<string, string> = {},
): WorkerDeps {
  const config = loadConfig({
    DATABASE_URL: t.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: queuePrefix,
    LOG_LEVEL: 'silent',
    ...env,
  });
  return createWorkerDeps(config, t.db, connection, createLogger(config));
}
