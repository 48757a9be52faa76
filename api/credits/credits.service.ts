import type { Db } from '../../shared/db.js';
import { HttpError } from '../../shared/errors.js';
import { isKeyLive, type KeyPrincipal } from '../repositories/api-key.repository.js';
import { usedInPeriod } from '../repositories/usage.repository.js';
import { type Period, periodAt } from './period.js';
import {
  RESERVE_EXHAUSTED,
  RESERVE_MISSING_COUNTER,
  RESERVE_MISSING_KEY,
  type RedisCounters,
} from './redis-counters.js';
import type { UsageWriter } from './usage-writer.js';

export const paymentRequired = () => new HttpError(402, 'Data credits exhausted for this period');
const revoked = () => new HttpError(403, 'Invalid api_key parameter value');

/** A credit held in Redis for a request that has not answered yet. */
export interface Reservation {
  principal: KeyPrincipal;
  period: Period;
  counter: string;
  settled: boolean;
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

  async reserve(principal: KeyPrincipal): Promise<Reservation> {
    const now = this.clock();
    const period = periodAt(principal.anchorDate, now);
    const counter = this.counters.counterKey(principal.subscriptionId, period.start);
    // At most one rebuild of each kind: the retry then finds what was just written.
    for (let attempt = 0; attempt < 3; attempt++) {
      const result = await this.counters.reserve(principal.keyId, counter, principal.credits);
      if (result > 0) return { principal, period, counter, settled: false };
      if (result === RESERVE_EXHAUSTED) throw paymentRequired();
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

  /** Commits the reserved credit to the ledger; 402 when the ledger says the period is spent. */
  async settle(reservation: Reservation): Promise<Usage> {
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
    await this.counters.refund(reservation.counter);
  }
}
