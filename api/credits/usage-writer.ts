import type { Db } from '../../shared/db.js';
import { type ChargeLine, chargeBatch } from './usage.repository.js';

export interface Settlement {
  accepted: boolean;
  /** Credits used in the period once this request is counted (the ledger's own count). */
  used: number;
}

interface Waiter {
  subscriptionId: number;
  periodStart: Date;
  limit: number;
  resolve(s: Settlement): void;
  reject(e: unknown): void;
}

/**
 * Group commit for the usage ledger. A 200 is sent only after its credit is committed in Postgres
 * (so an API crash or a Redis flush cannot lose served requests), but one ledger statement carries
 * every request that arrived while the previous one ran: one row update per batch, not per request,
 * which is what caps a single-row design at a few thousand requests per second.
 */
export class UsageWriter {
  private pending: Waiter[] = [];
  private running: Promise<void> | null = null;

  constructor(private readonly db: Db) {}

  charge(subscriptionId: number, periodStart: Date, limit: number): Promise<Settlement> {
    return new Promise((resolve, reject) => {
      this.pending.push({ subscriptionId, periodStart, limit, resolve, reject });
      this.running ??= this.drain();
    });
  }

  /** Waits for every charge handed in so far. */
  async flush(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    // Let every request whose query finished in this turn of the event loop join the first batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      while (this.pending.length > 0) {
        const batch = this.pending;
        this.pending = [];
        await this.commit(batch);
      }
    } finally {
      this.running = null;
    }
  }

  private async commit(batch: Waiter[]): Promise<void> {
    const groups = new Map<string, { line: ChargeLine; waiters: Waiter[] }>();
    for (const w of batch) {
      const key = `${w.subscriptionId}:${w.periodStart.getTime()}`;
      const group = groups.get(key);
      if (group) {
        group.line.n += 1;
        group.waiters.push(w);
      } else {
        groups.set(key, {
          line: { subscriptionId: w.subscriptionId, periodStart: w.periodStart, n: 1, limit: w.limit },
          waiters: [w],
        });
      }
    }
    const ordered = [...groups.values()].sort(
      (a, b) =>
        a.line.subscriptionId - b.line.subscriptionId ||
        a.line.periodStart.getTime() - b.line.periodStart.getTime(),
    );
    try {
      const results = await chargeBatch(
        this.db,
        ordered.map((g) => g.line),
      );
      ordered.forEach((group, i) => {
        const result = results[i]!;
        const before = result.used - result.accepted;
        group.waiters.forEach((w, k) => {
          w.resolve(
            k < result.accepted
              ? { accepted: true, used: before + k + 1 }
              : { accepted: false, used: result.used },
          );
        });
      });
    } catch (error) {
      for (const w of batch) w.reject(error);
    }
  }
}
