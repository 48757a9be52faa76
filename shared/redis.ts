import { Redis, type RedisOptions } from 'ioredis';
import { outageOf } from './outage.js';

/**
 * Producers (the CLI, the API) fail fast when Redis is away; workers must wait for it forever,
 * as BullMQ requires (maxRetriesPerRequest: null).
 */
export function createRedis(url: string, role: 'producer' | 'worker', extra: RedisOptions = {}): Redis {
  const redis = new Redis(url, {
    lazyConnect: false,
    enableOfflineQueue: role === 'worker',
    maxRetriesPerRequest: role === 'worker' ? null : 1,
    connectTimeout: 5_000,
    ...extra,
  });
  // Connection errors go to the client's outage tracker (without a listener an unreachable Redis
  // would crash the process): one line per outage where a process watches it (reportRedisOutages),
  // debug lines otherwise (a CLI command reports its own failed call).
  redis.on('error', (err) => outageOf(redis, 'Redis').down(err));
  redis.on('ready', () => outageOf(redis, 'Redis').up());
  return redis;
}
