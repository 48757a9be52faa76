import path from 'node:path';
import type { Command } from 'commander';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app.js';
import { DASHBOARD_PATH } from '../../api/ops/ops.plugin.js';
import { openProducerQueue } from '../../jobs/queue.js';
import { createWorkerDeps, startWorkers, workerPoolSize } from '../../jobs/worker.js';
import type { Config } from '../../shared/config.js';
import { createDb, ensureDatabase, migrateToLatest } from '../../shared/db.js';
import { createLogger, type Logger } from '../../shared/logger.js';
import { reportPgOutages, reportRedisOutages } from '../../shared/outage.js';
import { createRedis } from '../../shared/redis.js';
import {
  CliError,
  cliConfig,
  databaseUrlOf,
  meiliMasterKeyOf,
  meiliUrlOf,
  redisUrlOf,
  reportCliError,
} from '../cli-context.js';
import { RedisNotInstalledError } from '../local/embedded-redis.js';
import { type LocalServices, StartLockedError, startLocalServices } from '../local/local-services.js';
import { watchParent } from '../local/parent-watch.js';
import {
  demoKey,
  importSamples,
  isFreshDatabase,
  localAdminToken,
  waitForSearchIndex,
} from './start.first-run.js';

interface StartOptions {
  samples: boolean;
  shutdownTimeout: number;
  exitWithParent: boolean;
}

/** A stop signal repeated within this time is the same request delivered twice, not a second one. */
const REPEATED_SIGNAL_MS = 1000;

/** Things to undo on the way out, most recent first. */
type Closer = { name: string; close: () => Promise<unknown> };

async function closeAll(closers: Closer[], log: Logger): Promise<void> {
  for (const c of closers.reverse()) {
    const t0 = Date.now();
    await c.close().catch((err: unknown) => log.warn({ err, step: c.name }, 'error while stopping'));
    log.info({ step: c.name, ms: Date.now() - t0 }, 'stopped');
  }
}

async function startServices(config: Config, log: Logger): Promise<LocalServices> {
  try {
    return await startLocalServices(config, log);
  } catch (error) {
    if (error instanceof RedisNotInstalledError || error instanceof StartLockedError) {
      throw new CliError(error.message);
    }
    throw new CliError(`could not start the embedded services: ${(error as Error).message}`);
  }
}

function banner(url: string, embedded: string[], dataDir: string, adminToken: string, key: string): string {
  const shown = url.replace('://0.0.0.0:', '://127.0.0.1:');
  return [
    '',
    `bizdir is running${embedded.length ? ` (embedded ${embedded.join(', ')}; data in ${dataDir})` : ''}`,
    `  API        ${shown}`,
    `  API docs   ${shown}/docs`,
    `  Dashboard  ${shown}${DASHBOARD_PATH}   (user: admin, password: the admin token)`,
    `  Metrics    ${shown}/metrics   (Authorization: Bearer <admin token>)`,
    `  Admin token ${adminToken}`,
    `  Demo key   ${key}`,
    '',
    `Try: curl '${shown}/v1/org/search?q=harbour&api_key=${key}'`,
    'Press Ctrl-C to stop.',
    '',
  ].join('\n');
}

/**
 * `bizdir start` (= `npm start`): one process with the API and the workers, on embedded services
 * where no URL is configured. Shutdown order matters: the API stops accepting and finishes its
 * requests, workers finish or hand back their batch, pools close, and only then do the embedded
 * servers stop (Postgres last), so nothing is half-written.
 */
async function runStart(opts: StartOptions): Promise<void> {
  // Read first: the parent may die while the services start, and the watch must still see it.
  const parentAtStart = process.ppid;
  const base = cliConfig();
  // Logs go to stderr so stdout stays the banner a person (or the start test) reads.
  const log = createLogger(base, { service: 'bizdir' }, undefined, 2);
  const services = await startServices(base, log);
  const closers: Closer[] = [{ name: 'embedded services', close: () => services.stop() }];
  let app: FastifyInstance | undefined;
  try {
    const dataDir = path.resolve(base.dataDir);
    const filled = services.config;
    const config: Config = Object.freeze({
      ...filled,
      databaseUrl: databaseUrlOf(filled),
      redisUrl: redisUrlOf(filled),
      meiliUrl: meiliUrlOf(filled),
      meiliMasterKey: meiliMasterKeyOf(filled),
      adminToken: filled.adminToken ?? (await localAdminToken(dataDir)),
    });
    const databaseUrl = config.databaseUrl ?? '';
    await ensureDatabase(databaseUrl);
    const dbHandle = createDb(databaseUrl, {
      max: workerPoolSize(1),
      applicationName: 'bizdir-start',
    });
    closers.push({ name: 'database pool', close: () => dbHandle.close() });
    await migrateToLatest(dbHandle.db, (line) => log.info(line));

    const connection = createRedis(config.redisUrl ?? '', 'worker');
    // Outages of either are logged once each, with their end (the clients reconnect by themselves).
    reportPgOutages(log, dbHandle.pool);
    reportRedisOutages(log, connection);
    closers.push({
      name: 'worker redis',
      close: () => connection.quit().catch(() => connection.disconnect()),
    });
    const deps = createWorkerDeps(config, dbHandle.db, connection, log.child({ role: 'worker' }));
    const workers = startWorkers(deps);
    closers.push({ name: 'workers', close: () => workers.close(opts.shutdownTimeout) });

    if (opts.samples && (await isFreshDatabase(dbHandle.db))) {
      log.info('first start: importing the sample feeds');
      const producer = await openProducerQueue(config, config.redisUrl ?? '', 'import');
      try {
        await importSamples(dbHandle.db, producer.queue, log);
        await waitForSearchIndex(dbHandle.db, log);
      } finally {
        await producer.close();
      }
    }
    const key = await demoKey(dbHandle.db, dataDir, log);

    app = await buildApp({ config, logger: log.child({ role: 'api' }) });
    const url = await app.listen({ host: config.host, port: config.port }).catch((error: unknown) => {
      if ((error as { code?: string }).code !== 'EADDRINUSE') throw error;
      throw new CliError(`${config.host}:${config.port} is already in use; set PORT to a free port`);
    });
    const started = app;
    closers.push({ name: 'api', close: () => started.close() });
    process.stdout.write(banner(url, services.embedded, dataDir, config.adminToken ?? '', key));
  } catch (error) {
    await closeAll(closers, log);
    throw error;
  }

  await new Promise<void>((resolve) => {
    let stoppingSince: number | undefined;
    const force = (code: number) => {
      for (const pid of services.pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      process.exit(code);
    };
    const stop = (reason: NodeJS.Signals | 'parent exited') => {
      if (stoppingSince !== undefined) {
        // Under `npm start` one Ctrl-C arrives twice: from the terminal, and forwarded by npm a
        // moment later. Only a second press (or signal) after that is the user refusing to wait.
        if (reason === 'parent exited' || Date.now() - stoppingSince < REPEATED_SIGNAL_MS) return;
        force(130);
      }
      stoppingSince = Date.now();
      log.info({ reason }, 'shutting down (Ctrl-C again to force)');
      // Bounded: workers get their shutdown timeout, everything else (requests, pools, servers
      // writing their last checkpoint) another 30 s; after that nothing we started outlives us.
      setTimeout(() => {
        log.error('shutdown deadline passed; killing the embedded services');
        force(1);
      }, opts.shutdownTimeout + 30_000).unref();
      closeAll(closers, log).finally(resolve);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    // A parent that dies without passing a signal on (npm or a supervisor killed hard) must not
    // leave us, and the embedded servers, running with no one to stop us.
    if (opts.exitWithParent) watchParent(() => stop('parent exited'), 1000, parentAtStart);
  });
  process.stdout.write('bizdir stopped\n');
  // Everything we own is closed; a library timer or reconnect loop must not keep the process
  // alive after Ctrl-C (stdout and stderr are synchronous for files and pipes, so nothing is lost).
  process.exit(0);
}

export function registerStart(program: Command): void {
  program
    .command('start')
    .description(
      'API and workers in one process, on embedded Postgres/Redis/Meilisearch where no URL is set; ' +
        'first start loads the sample feeds and prints a demo key',
    )
    .option('--no-samples', 'do not import the sample feeds into a new database')
    .option(
      '--no-exit-with-parent',
      'keep running when the process that started it exits (by default that stops bizdir as SIGTERM does)',
    )
    .option(
      '--shutdown-timeout <ms>',
      'how long running jobs may finish on Ctrl-C/SIGTERM',
      (v: string) => {
        if (!/^\d+$/.test(v)) throw new CliError('--shutdown-timeout must be a whole number of milliseconds');
        return Number(v);
      },
      30_000,
    )
    .action(async (opts: StartOptions) => {
      try {
        await runStart(opts);
      } catch (error) {
        // Everything started is stopped by now; a library's retry timer must not keep a failed
        // start hanging, so report and end here rather than return to the event loop.
        process.exit(reportCliError(error));
      }
    });
}
