import type { Redis } from 'ioredis';

/**
 * The fast side of data credits and rate limits: one Redis round trip per request checks that the key
 * is still live, counts the request against its account's rate limit and reserves a credit, atomically
 * (a Lua script, so processes never race). Redis is only a cache of the Postgres ledger: a missing
 * counter is rebuilt from it, a missing liveness mark is re-checked in Postgres (revoking a key
 * deletes its mark). The rate limit is a fixed window, as @fastify/rate-limit counts it: the first
 * request of a window starts it, every request in it counts (refused ones too), and it ends
 * `window` after its first request.
 *
 * Why not @fastify/rate-limit with its Redis store: it would be a second round trip per request
 * (its own `increment` script, in a hook the request waits for before ours runs), and two scripts
 * in a row answered fewer calls a second, each slower, than one (docs/journal/2026-11-23.md,
 * 20:26). One script also keeps the order exact (a
 * refused request never holds a credit) and lets GET /v1/usage read the same window. The window,
 * the counting and the header names follow the library's, so clients see no difference.
 */
export const RESERVE_MISSING_KEY = -2;
export const RESERVE_MISSING_COUNTER = -1;
export const RESERVE_EXHAUSTED = -3;
export const RESERVE_RATE_LIMITED = -4;

// KEYS: liveness mark, credit counter, rate-limit window. ARGV: credits, rate limit (0: none), window
// ms, whether to take a credit (1/0). Returns {outcome, requests in the window, ms until it ends}; the
// outcome of a call that takes no credit is 0. The window is only counted once the key and the
// counter are known to exist, so a retry after a rebuild does not count twice.
const RESERVE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {-2, 0, 0} end
local credit = ARGV[4] == '1'
local used = false
if credit then
  used = redis.call('GET', KEYS[2])
  if not used then return {-1, 0, 0} end
end
local count, ttl = 0, 0
local limit = tonumber(ARGV[2])
if limit > 0 then
  count = redis.call('INCR', KEYS[3])
  ttl = redis.call('PTTL', KEYS[3])
  if ttl < 0 then
    redis.call('PEXPIRE', KEYS[3], ARGV[3])
    ttl = tonumber(ARGV[3])
  end
  if count > limit then return {-4, count, ttl} end
end
if not credit then return {0, count, ttl} end
if tonumber(used) >= tonumber(ARGV[1]) then return {-3, count, ttl} end
return {redis.call('INCR', KEYS[2]), count, ttl}`;

// The window as it stands, without counting a request (GET /v1/usage). {requests, ms until it ends}.
const PEEK = `
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
local ttl = redis.call('PTTL', KEYS[1])
return {count, ttl}`;

const REFUND = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end
return 0`;

// Raises a counter that fell below the ledger (rebuilt while other requests were being committed).
const RAISE = `
local cur = redis.call('GET', KEYS[1])
if cur and tonumber(cur) < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL') end
return 0`;

/** What one reservation found: its outcome (a counter value > 0, or one of the codes above) and window. */
export interface ReserveResult {
  outcome: number;
  /** Requests counted in the current rate-limit window (0 without a limit). */
  windowCount: number;
  /** Milliseconds until the window ends. */
  windowTtlMs: number;
}

export interface RateLimitRule {
  max: number;
  windowSeconds: number;
}

interface CounterCommands {
  bizdirReserve(
    live: string,
    counter: string,
    window: string,
    credits: number,
    limit: number,
    windowMs: number,
    takeCredit: 0 | 1,
  ): Promise<[number, number, number]>;
  bizdirPeek(window: string): Promise<[number, number]>;
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
    redis.defineCommand('bizdirReserve', { numberOfKeys: 3, lua: RESERVE });
    redis.defineCommand('bizdirPeek', { numberOfKeys: 1, lua: PEEK });
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

  /** The rate-limit window of an account (all its keys share it). */
  windowKey(accountId: number): string {
    return `${this.prefix}:rl:${accountId}`;
  }

  /**
   * Checks the key and, as asked, counts the request in the account's window (`rule`; null: not
   * counted) and takes a credit.
   */
  async reserve(
    keyId: number,
    counter: string,
    credits: number,
    accountId: number,
    rule: RateLimitRule | null,
    takeCredit: boolean,
  ): Promise<ReserveResult> {
    const [outcome, windowCount, windowTtlMs] = await this.redis.bizdirReserve(
      this.liveKey(keyId),
      counter,
      this.windowKey(accountId),
      credits,
      rule?.max ?? 0,
      (rule?.windowSeconds ?? 0) * 1000,
      takeCredit ? 1 : 0,
    );
    return { outcome, windowCount, windowTtlMs };
  }

  /** The account's current window, not counting anything. */
  async peekWindow(accountId: number): Promise<{ windowCount: number; windowTtlMs: number }> {
    const [windowCount, ttl] = await this.redis.bizdirPeek(this.windowKey(accountId));
    return { windowCount, windowTtlMs: ttl };
  }

  /** Whether the key's liveness mark is there (a cheap revocation check without reserving). */
  async isMarkedLive(keyId: number): Promise<boolean> {
    return (await this.redis.exists(this.liveKey(keyId))) === 1;
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
