import { Redis } from 'ioredis';
import { TEST_REDIS_URL, uniqueSuffix } from './env.js';

/** A queue prefix of this test's own; `cleanup` deletes every key under it. */
export function testQueuePrefix(): { prefix: string; cleanup(): Promise<void> } {
  const prefix = `bizdir-test-${uniqueSuffix()}`;
  return {
    prefix,
    async cleanup() {
      const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
      try {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
          cursor = next;
          if (keys.length > 0) await redis.del(...keys);
        } while (cursor !== '0');
      } finally {
        redis.disconnect();
      }
    },
  };
}
