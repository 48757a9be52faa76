import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/logger.js';
import { isAlive, stopProcessesUsing } from './child-process.js';
import { type EmbeddedService, startEmbeddedPostgres } from './embedded-postgres.js';
import { startEmbeddedRedis } from './embedded-redis.js';
import { startMeiliServer } from './meili-server.js';
import { removeRunning, writeRunning } from './running.js';

export class StartLockedError extends Error {
  override name = 'StartLockedError';
}

/**
 * One `bizdir start` per data folder: two would fight over the same Postgres cluster. The lock
 * names its owner's pid; a lock whose owner is gone (killed hard) is taken over.
 */
async function takeStartLock(dataDir: string): Promise<() => Promise<void>> {
  const file = path.join(dataDir, 'start.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await fs.writeFile(file, String(process.pid), { flag: 'wx' });
      return () => fs.rm(file, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number((await fs.readFile(file, 'utf8').catch(() => '')).trim());
      if (owner > 0 && owner !== process.pid && isAlive(owner)) {
        throw new StartLockedError(
          `bizdir start is already running (pid ${owner}) on the data folder ${dataDir}; ` +
            'stop it first, or set DATA_DIR to another folder',
        );
      }
      await fs.rm(file, { force: true });
    }
  }
  throw new StartLockedError(`could not take the start lock ${file}`);
}

/** Meilisearch's master key persists with its data, so restarts keep working with the same key. */
async function meiliKey(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'meili.key');
  const existing = await fs.readFile(file, 'utf8').catch(() => '');
  if (existing.trim()) return existing.trim();
  const key = randomBytes(24).toString('base64url');
  await fs.writeFile(file, `${key}\n`, { mode: 0o600 });
  return key;
}

export interface LocalServices {
  /** The configuration with every URL filled in: configured ones kept, embedded ones added. */
  readonly config: Config;
  /** Names of the services this process started (for the start-up banner). */
  readonly embedded: string[];
  /** Pids of every server process this process started (the start test checks they are gone). */
  readonly pids: number[];
  /** Stops what was started, in reverse order; configured external services are left alone. */
  stop(): Promise<void>;
}

/**
 * Starts embedded Postgres, Redis and Meilisearch for each service whose URL is not configured,
 * in parallel, with their data under DATA_DIR so that the next start reuses it.
 */
export async function startLocalServices(config: Config, log: Logger): Promise<LocalServices> {
  const dataDir = path.resolve(config.dataDir);
  await fs.mkdir(dataDir, { recursive: true });
  const releaseLock = await takeStartLock(dataDir);
  const masterKey = config.meiliUrl
    ? config.meiliMasterKey
    : (config.meiliMasterKey ?? (await meiliKey(dataDir)));
  const starts: Array<Promise<EmbeddedService>> = [];
  if (!config.databaseUrl) starts.push(startEmbeddedPostgres({ dataDir }));
  if (!config.redisUrl) starts.push(startEmbeddedRedis({ dataDir }));
  if (!config.meiliUrl && masterKey) {
    const meiliDir = path.join(dataDir, 'meilisearch');
    starts.push(
      // A Meilisearch left by a hard-killed start still holds the database's lock.
      stopProcessesUsing(path.join(meiliDir, 'data.ms'), 'SIGTERM').then(() =>
        startMeiliServer({
          dataDir: meiliDir,
          masterKey,
          maxIndexingMemory: config.meiliMaxIndexingMemory,
          maxIndexingThreads: config.meiliMaxIndexingThreads,
          reduceIndexingMemory: config.meiliReduceIndexingMemory,
          log: (line) => log.debug({ component: 'meilisearch' }, line),
        }).then((m) => ({
          name: 'meilisearch',
          url: m.url,
          pids: m.process.pid ? [m.process.pid] : [],
          stop: m.stop,
        })),
      ),
    );
  }
  const settled = await Promise.allSettled(starts);
  const started = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stopAll = async () => {
    // Postgres last: anything still draining (a worker's final batch) needs it until the end.
    const order = ['meilisearch', 'redis', 'postgres'];
    for (const name of order) {
      const service = started.find((s) => s.name === name);
      if (!service) continue;
      await service
        .stop()
        .catch((error: unknown) => log.warn({ err: error, component: name }, 'stop failed'));
      log.info({ component: name }, 'stopped');
    }
    await removeRunning(dataDir);
    await releaseLock();
  };
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await stopAll();
    throw failed.reason;
  }
  const url = (name: string) => started.find((s) => s.name === name)?.url;
  const filled: Config = Object.freeze({
    ...config,
    databaseUrl: config.databaseUrl ?? url('postgres'),
    redisUrl: config.redisUrl ?? url('redis'),
    meiliUrl: config.meiliUrl ?? url('meilisearch'),
    meiliMasterKey: masterKey,
  });
  await writeRunning(dataDir, {
    pid: process.pid,
    databaseUrl: url('postgres'),
    redisUrl: url('redis'),
    meiliUrl: url('meilisearch'),
    meiliMasterKey: url('meilisearch') ? masterKey : undefined,
  });
  return {
    config: filled,
    embedded: started.map((s) => s.name),
    pids: started.flatMap((s) => s.pids),
    stop: stopAll,
  };
}
