import type { Redis } from 'ioredis';

/**
 * The fast side of data credits: one Redis round trip per request checks that the key is still live
 * and reserves a credit atomically (a Lua script, so processes never race). Redis is only a cache of
 * the Postgres ledger: a missing counter is rebuilt from it, a missing liveness mark is re-checked in
 * Postgres (revoking a key deletes its mark).
 */
export const RESERVE_MISSING_KEY = -2;
export const RESERVE_MISSING_COUNTER = -1;
export const RESERVE_EXHAUSTED = -3;

const RESERVE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -2 end
local used = redis.call('GET', KEYS[2])
if not used then return -1 end
if tonumber(used) >= tonumber(ARGV[1]) then return -3 end
return redis.call('INCR', KEYS[2])`;

const REFUND = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end
return 0`;

// Raises a counter that fell below the ledger (rebuilt while other requests were being committed).
const RAISE = `
local cur = redis.call('GET', KEYS[1])
if cur and tonumber(cur) < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL') end
return 0`;

interface CounterCommands {
  bizdirReserve(live: string, counter: string, limit: number): Promise<number>;
  bizdirRefund(counter: string): Promise<number>;
  bizdirRaise(counter: string, value: number): Promise<number>;
}

const LIVE_TTL_SECONDS = 300;
/** Counters outlive their period a little, so a late refund cannot recreate one. */
const COUNTER_GRACE_MS = 7 * 24 * 3600 * 1000;

export class RedisCounters {
  private readonly redis: Redis & CounterCommands;

  constructor(
    redis: Redis,
    private readonly prefix: string,
  ) {
    redis.defineCommand('bizdirReserve', { numberOfKeys: 2, lua: RESERVE });
    redis.defineCommand('bizdirRefund', { numberOfKeys: 1, lua: REFUND });
    redis.defineCommand('bizdirRaise', { numberOfKeys: 1, lua: RAISE });
    this.redis = redis as Redis & CounterCommands;
  }

  liveKey(keyId: number): string {
    return `${this.prefix}:live:${keyId}`;
  }

  counterKey(subscriptionId: number, periodStart: Date): string {
    return `${this.prefix}:used:${subscriptionId}:${periodStart.getTime()}`;
  }

  reserve(keyId: number, counter: string, limit: number): Promise<number> {
    return this.redis.bizdirReserve(this.liveKey(keyId), counter, limit);
  }

  async markLive(keyId: number): Promise<void> {
    await this.redis.set(this.liveKey(keyId), '1', 'EX', LIVE_TTL_SECONDS);
  }

  /**
   * Seeds a lost counter from the ledger; NX so a counter another process already seeded wins.
   * The lifetime is relative (the rest of the period, plus grace), as the app's clock need not be Redis's.
   */
  async seed(counter: string, used: number, period: { next: Date }, now: Date): Promise<void> {
    const ttl = Math.max(60_000, period.next.getTime() - now.getTime()) + COUNTER_GRACE_MS;
    await this.redis.set(counter, String(used), 'PX', ttl, 'NX');
  }

  async refund(counter: string): Promise<void> {
    await this.redis.bizdirRefund(counter);
  }

  async raise(counter: string, value: number): Promise<void> {
    await this.redis.bizdirRaise(counter, value);
  }

  async forgetKey(keyId: number): Promise<void> {
    await this.redis.del(this.liveKey(keyId));
  }
}

/** The Redis namespace of the API's counters, under the deployment's own prefix. */
export const counterPrefix = (queuePrefix: string) => `${queuePrefix}:api`;
