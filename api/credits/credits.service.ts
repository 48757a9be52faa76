import type { Db } from '../../shared/db.js';
import { HttpError } from '../../shared/errors.js';
import { isKeyLive, type KeyPrincipal } from './api-key.repository.js';
import { type Period, periodAt } from './period.js';
import {
  type RateLimitRule,
  RESERVE_EXHAUSTED,
  RESERVE_MISSING_COUNTER,
  RESERVE_MISSING_KEY,
  RESERVE_RATE_LIMITED,
  type RedisCounters,
} from './redis-counters.js';
import { usedInPeriod } from './usage.repository.js';
import type { UsageWriter } from './usage-writer.js';

export const paymentRequired = () => new HttpError(402, 'Data credits exhausted for this period');
const revoked = () => new HttpError(403, 'Invalid api_key parameter value');

/** An account's rate-limit window as the RateLimit-* headers and GET /v1/usage report it. */
export interface RateLimitState {
  limit: number;
  windowSeconds: number;
  remaining: number;
  /** Seconds until the window ends (and `remaining` is `limit` again). */
  resetSeconds: number;
}

export function rateLimitState(rule: RateLimitRule, count: number, ttlMs: number): RateLimitState {
  return {
    limit: rule.max,
    windowSeconds: rule.windowSeconds,
    remaining: Math.max(0, rule.max - count),
    // No window open (no request yet, or it just ended): a new one would last the whole window.
    resetSeconds: ttlMs > 0 ? Math.ceil(ttlMs / 1000) : count > 0 ? 1 : rule.windowSeconds,
  };
}

/** 429: the account's rate limit is reached for this window. */
export class RateLimitedError extends HttpError {
  constructor(readonly rateLimit: RateLimitState) {
    super(
      429,
      `rate limit of ${rateLimit.limit} requests per ${rateLimit.windowSeconds} seconds reached; ` +
        `retry in ${rateLimit.resetSeconds} seconds`,
    );
  }
}

/** The window a refused reservation had counted the request in (a 429, or a 402 after counting). */
export function rateLimitOf(error: unknown): RateLimitState | null {
  return (error as { rateLimit?: RateLimitState } | null)?.rateLimit ?? null;
}

/** A credit held in Redis for a request that has not answered yet. */
export interface Reservation {
  principal: KeyPrincipal;
  period: Period;
  counter: string;
  /** Whether a credit is held in Redis (a conditional read takes one only once it must answer 200). */
  held: boolean;
  settled: boolean;
  /** The rate-limit window this request was counted in; null when the account has no limit. */
  rateLimit: RateLimitState | null;
}

/** The `request` object of the spec, less `id` (the request's own). */
export interface Usage {
  period: Period;
  used: number;
  principal: KeyPrincipal;
}

/**
 * Data credits: reserve in Redis before the handler runs (exact under any concurrency, across
 * processes), commit to the Postgres ledger before a 200 leaves (durable), give the credit back for
 * any other answer (only 200s cost).
 */
export class CreditsService {
  constructor(
    private readonly db: Db,
    private readonly counters: RedisCounters,
    private readonly writer: UsageWriter,
    private readonly clock: () => Date,
  ) {}

  /**
   * Checks the key, counts the request against the rate limit and, unless `takeCredit` is false (a
   * conditional read that may end in a free 304), holds a credit. One Redis round trip.
   */
  async reserve(principal: KeyPrincipal, takeCredit = true): Promise<Reservation> {
    return this.run(principal, principal.rateLimit, takeCredit);
  }

  /** Takes the credit a reservation made without one needs after all (its 200 is known now). */
  async hold(reservation: Reservation): Promise<void> {
    if (reservation.held) return;
    await this.run(reservation.principal, null, true);
    reservation.held = true;
  }

  private async run(
    principal: KeyPrincipal,
    rule: KeyPrincipal['rateLimit'],
    takeCredit: boolean,
  ): Promise<Reservation> {
    const now = this.clock();
    const period = periodAt(principal.anchorDate, now);
    const counter = this.counters.counterKey(principal.subscriptionId, period.start);
    // At most one rebuild of each kind: the retry then finds what was just written.
    for (let attempt = 0; attempt < 3; attempt++) {
      const reply = await this.counters.reserve(
        principal.keyId,
        counter,
        principal.credits,
        principal.accountId,
        rule,
        takeCredit,
      );
      const result = reply.outcome;
      const rateLimit = rule ? rateLimitState(rule, reply.windowCount, reply.windowTtlMs) : null;
      if (result > 0 || (result === 0 && !takeCredit)) {
        return { principal, period, counter, held: takeCredit, settled: false, rateLimit };
      }
      if (result === RESERVE_RATE_LIMITED && rateLimit) throw new RateLimitedError(rateLimit);
      if (result === RESERVE_EXHAUSTED) throw Object.assign(paymentRequired(), { rateLimit });
      if (result === RESERVE_MISSING_KEY) {
        if (!(await isKeyLive(this.db, principal.keyId))) throw revoked();
        await this.counters.markLive(principal.keyId);
      } else if (result === RESERVE_MISSING_COUNTER) {
        const used = await usedInPeriod(this.db, principal.subscriptionId, period.start);
        await this.counters.seed(counter, used, period, now);
      }
    }
    throw new Error('credit counters could not be rebuilt');
  }

  /**
   * The account's usage without using anything (GET /v1/usage): the ledger's count for the period
   * and the rate-limit window as it stands. 403 when the key has been revoked.
   */
  async peek(principal: KeyPrincipal): Promise<Usage & { rateLimit: RateLimitState | null }> {
    const now = this.clock();
    const period = periodAt(principal.anchorDate, now);
    const [live, used, window] = await Promise.all([
      this.counters.isMarkedLive(principal.keyId),
      usedInPeriod(this.db, principal.subscriptionId, period.start),
      principal.rateLimit ? this.counters.peekWindow(principal.accountId) : null,
    ]);
    if (!live) {
      if (!(await isKeyLive(this.db, principal.keyId))) throw revoked();
      await this.counters.markLive(principal.keyId);
    }
    const rule = principal.rateLimit;
    const rateLimit = rule && window ? rateLimitState(rule, window.windowCount, window.windowTtlMs) : null;
    return { period, used, principal, rateLimit };
  }

  /** The usage of a reservation's period as the ledger has it, using nothing (a free 200). */
  async current(reservation: Reservation): Promise<Usage> {
    const { principal, period } = reservation;
    return { period, used: await usedInPeriod(this.db, principal.subscriptionId, period.start), principal };
  }

  /** Commits the reserved credit to the ledger; 402 when the ledger says the period is spent. */
  async settle(reservation: Reservation): Promise<Usage> {
    await this.hold(reservation);
    const { principal, period } = reservation;
    const result = await this.writer.charge(principal.subscriptionId, period.start, principal.credits);
    reservation.settled = true;
    if (!result.accepted) {
      // Redis had lost count (rebuilt while other requests were in flight): the ledger wins.
      await this.counters.raise(reservation.counter, result.used);
      throw paymentRequired();
    }
    return { period, used: result.used, principal };
  }

  /** Gives an unsettled reservation back (the request did not end in a 200). */
  async release(reservation: Reservation): Promise<void> {
    if (reservation.settled) return;
    reservation.settled = true;
    if (!reservation.held) return;
    await this.counters.refund(reservation.counter);
  }
}
