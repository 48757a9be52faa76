import { Redis, type RedisOptions } from 'ioredis';

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
  // Without a listener an unreachable Redis would crash the process with an unhandled 'error' event.
  redis.on('error', () => {});
  return redis;
}
