import type { FastifyBaseLogger } from 'fastify';
import { encodeCursor } from '../../events/event-cursor.js';
import { latestVisible } from '../../events/feed.read-model.js';
import type { Db } from '../../shared/db.js';
import { PgListener } from '../../shared/pg-listener.js';

/** The channel migration 0025 NOTIFYs once per transaction that wrote events. */
export const EVENTS_CHANNEL = 'bizdir_events';

/** How often the feed's end is looked at while someone waits (it also moves when no NOTIFY comes). */
const TICK_MS = 500;

/**
 * Long polls (GET /v1/events?wait=) of one API process, on one Postgres connection whatever their
 * number: a waiting request holds no connection. The feed's end (its last visible event) is read,
 * one query for all waiters, when a transaction that wrote events commits (NOTIFY) and every
 * TICK_MS while anyone waits: an event can become visible without a NOTIFY of its own, when the
 * transaction that held the horizon back ends (events.read-model.ts). When the end has moved, every
 * waiter wakes and reads its own page again.
 *
 * A request takes `mark` before the read it may wait after: the end moving at any time after that
 * (even before it starts waiting) wakes it at once.
 */
export class EventWaiter {
  private generation = 0;
  private last: string | null | undefined;
  private readonly waiters = new Set<() => void>();
  private listener: PgListener | null = null;
  private timer: NodeJS.Timeout | null = null;
  private checking = false;
  private again = false;
  private closedNow = false;

  constructor(
    private readonly db: Db,
    private readonly databaseUrl: string,
    private readonly log: FastifyBaseLogger,
  ) {}

  get mark(): number {
    return this.generation;
  }

  get closed(): boolean {
    return this.closedNow;
  }

  /** Resolves when the feed's end moved since `mark`, after `ms`, on `signal`, or when the app closes. */
  wait(mark: number, ms: number, signal?: AbortSignal): Promise<void> {
    if (this.closedNow || mark !== this.generation || ms <= 0 || signal?.aborted) return Promise.resolve();
    this.listen();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timeout);
        signal?.removeEventListener('abort', done);
        this.waiters.delete(done);
        if (this.waiters.size === 0) this.stopTicking();
        resolve();
      };
      const timeout = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.waiters.add(done);
      this.startTicking();
    });
  }

  /** Wakes every waiter (they answer what they have) and stops listening. */
  async close(): Promise<void> {
    this.closedNow = true;
    this.wakeAll();
    this.stopTicking();
    await this.listener?.close();
  }

  /** The listening connection, made on the first wait (an API nobody long-polls opens none). */
  private listen(): void {
    if (this.listener) return;
    this.listener = new PgListener({
      databaseUrl: this.databaseUrl,
      channel: EVENTS_CHANNEL,
      applicationName: 'bizdir-api-events',
      name: 'event long polls',
      log: this.log,
      onNotify: () => {
        if (this.waiters.size > 0) void this.check();
      },
      meanwhile: `waiting requests look for new events every ${TICK_MS} ms`,
      resumed: 'waiting requests learn of new events at commit again',
    });
    void this.listener.start();
  }

  private startTicking(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.check(), TICK_MS);
    this.timer.unref();
    void this.check();
  }

  private stopTicking(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }

  /** Reads the feed's end (one check at a time; a request for one during a check runs after it). */
  private async check(): Promise<void> {
    if (this.checking) {
      this.again = true;
      return;
    }
    this.checking = true;
    try {
      do {
        this.again = false;
        const latest = await latestVisible(this.db);
        const end = latest ? encodeCursor(latest) : null;
        if (end !== this.last) {
          this.last = end;
          this.generation++;
          this.wakeAll();
        }
      } while (this.again);
    } catch (err) {
      // Postgres away: the waiters time out with empty pages; the next tick tries again.
      this.log.debug({ err }, 'event long polls: could not read the end of the feed');
    } finally {
      this.checking = false;
    }
  }
}
