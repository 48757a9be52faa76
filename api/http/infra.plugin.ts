import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { type Config, LOCAL_DEFAULTS } from '../../shared/config.js';
import { createDb, type Db } from '../../shared/db.js';
import { type OutageTracker, outageTracker, watchOutages } from '../../shared/outage.js';
import { createRedis } from '../../shared/redis.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    db: Db;
    /** The pool under `db`, for the read models' prepared statements. */
    pool: pg.Pool;
    redis: Redis;
    /** Current time for data-credit periods; injectable so tests can cross a period boundary. */
    clock: () => Date;
    /** Logs an outage of Postgres, Redis or Meilisearch once, and its end (see shared/outage.ts). */
    outages: { postgres: OutageTracker; redis: OutageTracker; meilisearch: OutageTracker };
  }
}

/** Which backing service an error that made a request unavailable (503) came from. */
export function serviceOf(error: unknown): 'postgres' | 'redis' {
  const e = error as { name?: string; message?: string; command?: unknown };
  if (e?.command !== undefined || e?.name === 'MaxRetriesPerRequestError') return 'redis';
  return /Stream isn't writeable|Connection is closed|Command timed out|enableOfflineQueue/i.test(
    e?.message ?? '',
  )
    ? 'redis'
    : 'postgres';
}

/** Waits for the first Redis connection, so the first requests do not meet a connecting client. */
function readyOrTimeout(redis: Redis, ms: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    // Redis away at boot is not fatal: /readyz says so and the client keeps reconnecting.
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    }
    redis.once('ready', done);
  });
}

export interface InfraOptions {
  config: Config;
  clock: () => Date;
}

/**
 * The app's own Postgres pool and Redis connection, closed with the app. Both fail fast rather than
 * queue when their server is away, so a request gets a 503 at once (refused) or within a few seconds (unreachable) instead of hanging,
 * and both reconnect by themselves when it is back.
 */
export const infraPlugin = fp<InfraOptions>(
  async (app, { config, clock }) => {
    const pg = createDb(config.databaseUrl ?? LOCAL_DEFAULTS.databaseUrl, {
      max: 20,
      applicationName: 'bizdir-api',
      // Also the longest wait for a free pooled connection under load; a refused connection (server
      // down) fails at once whatever this says.
      connectionTimeoutMillis: 5_000,
      statementTimeoutMillis: 5_000,
    });
    const redis = createRedis(config.redisUrl ?? LOCAL_DEFAULTS.redisUrl, 'producer', {
      commandTimeout: 1_500,
      // Concurrent requests' credit scripts go out in one write: fewer syscalls on both sides.
      enableAutoPipelining: true,
      connectTimeout: 1_500,
      // Reconnect forever with a short back-off: the API must come back by itself.
      retryStrategy: (times) => Math.min(times * 100, 1_000),
    });
    await readyOrTimeout(redis, 2_000);
    app.decorate('config', config);
    app.decorate('db', pg.db);
    app.decorate('pool', pg.pool);
    app.decorate('redis', redis);
    app.decorate('clock', clock);
    // Outages are logged once each, with their end, however many requests meet them (503s).
    // createDb and createRedis route their clients' errors and reconnections to these trackers.
    const outages = {
      postgres: watchOutages(pg.pool, app.log, 'Postgres'),
      redis: watchOutages(redis, app.log, 'Redis'),
      meilisearch: outageTracker(app.log, 'Meilisearch'),
    };
    app.decorate('outages', outages);
    app.addHook('onClose', async () => {
      await pg.close();
      redis.disconnect();
    });
  },
  { name: 'bizdir-infra' },
);
