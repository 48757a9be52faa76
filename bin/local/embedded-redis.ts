import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { ignoreError } from '../../shared/outage.js';
import {
  commandLineOf,
  findOnPath,
  freePort,
  isAlive,
  spawnServer,
  stopOrphan,
  waitUntilReady,
} from './child-process.js';
import type { EmbeddedService } from './embedded-postgres.js';

export class RedisNotInstalledError extends Error {
  override name = 'RedisNotInstalledError';
  constructor() {
    super(
      'redis-server was not found on PATH. Install it from your system packages ' +
        '(Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis), ' +
        'or set REDIS_URL to a running Redis.',
    );
  }
}

async function ping(url: string): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1_000 });
  // The probe's answer is connect()'s result; the client's own error event says the same thing.
  redis.on('error', ignoreError('Redis probe connection error (the probe answers no)'));
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } finally {
    redis.disconnect();
  }
}

/** A redis-server left by a bizdir that was killed hard still holds the append-only file. */
async function stopLeftover(pidFile: string): Promise<void> {
  const pid = Number((await fs.readFile(pidFile, 'utf8').catch(() => '')).trim());
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  if (!(await commandLineOf(pid)).includes('redis-server')) return;
  await stopOrphan(pid, 'SIGTERM');
}

/**
 * Starts `redis-server` from PATH on a free loopback port with its data in `<dataDir>/redis`.
 * The queue must survive restarts (a job waiting at Ctrl-C runs after the next start), so the
 * append-only file is on; `noeviction` because BullMQ breaks when Redis drops keys under memory
 * pressure.
 */
export async function startEmbeddedRedis(options: { dataDir: string }): Promise<EmbeddedService> {
  const binary = await findOnPath('redis-server');
  if (!binary) throw new RedisNotInstalledError();
  const root = path.resolve(options.dataDir);
  const dir = path.join(root, 'redis');
  const pidFile = path.join(dir, 'redis.pid');
  const logFile = path.join(root, 'redis.log');
  await fs.mkdir(dir, { recursive: true });
  await stopLeftover(pidFile);
  const port = await freePort();
  const proc = await spawnServer(
    'redis-server',
    binary,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--pidfile',
      pidFile,
      '--appendonly',
      'yes',
      '--save',
      '',
      '--maxmemory-policy',
      'noeviction',
      '--daemonize',
      'no',
    ],
    { logFile },
  );
  const url = `redis://127.0.0.1:${port}`;
  await waitUntilReady(proc, () => ping(url), 30_000, logFile);
  return {
    name: 'redis',
    url,
    pids: [proc.pid],
    // SIGTERM makes redis-server flush its append-only file and exit cleanly.
    stop: () => proc.stop('SIGTERM', 15_000),
  };
}
