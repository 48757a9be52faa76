import { randomUUID } from 'node:crypto';
import type { Db } from '../shared/db.js';
import type { Logger } from '../shared/logger.js';
import {
  type AttemptRecord,
  acquireLease,
  type DeliveryState,
  disableDelivery,
  findDelivery,
  findTarget,
  moveCursor,
  recordFailure,
  recordSuccess,
  releaseLease,
  resolveReplay,
} from './delivery.repository.js';
import { type EventFeed, expandTypes, type FeedEvent, type FeedPage } from './event-feed.js';
import type { ReceiverAnswer, ReceiverClient } from './receiver-client.js';
import { afterFailure } from './retry-policy.js';
import { signedHeaders } from './signing.js';

/**
 * Delivers an endpoint's events, in feed order, at least once: one request at a time, the cursor in
 * Postgres moved past a request's events only after its 2xx, under the endpoint's lease (so one
 * worker at a time sends to an endpoint, whatever the queue holds). A failed request is retried
 * later with exactly the same events and webhook-id (`pending_last`); nothing after it is sent
 * meanwhile. The queue's job only says which endpoint; Postgres says where it stands.
 */

/** Events per request of a batching endpoint (`{"events":[…]}`). */
export const BATCH_SIZE = 100;
const CURSOR_EXPIRED =
  'the events after its place in the feed are no longer kept; replay it from a time to start again';

/** How often the cursor is written while requests succeed (see Delivery.flush). */
const FLUSH_MS = 50;

/** Events read from the feed at a time. */
const PAGE_SIZE = 100;

export interface DeliveryDeps {
  db: Db;
  feed: EventFeed;
  client: ReceiverClient;
  /** The clock (tests move it by days); default the real one. */
  now?: () => Date;
  /** Jitter's random source. */
  random?: () => number;
  log?: Pick<Logger, 'info' | 'warn' | 'debug'>;
}

export interface DeliveryLimits {
  /** Aborted on shutdown: the delivery stops after the request in flight. */
  signal?: AbortSignal;
  /** Requests before handing the worker to other endpoints. */
  maxRequests?: number;
  /** Time before handing the worker to other endpoints. */
  sliceMs?: number;
}

export type DeliveryOutcome =
  /** Every event the feed shows now has been delivered. */
  | { kind: 'caught-up'; sent: number }
  /** More to send; stopped to give others a turn (or on shutdown). */
  | { kind: 'yield'; sent: number }
  /** A request failed; the next try is at `at`. */
  | { kind: 'retry'; at: Date; sent: number }
  /** Another worker holds the endpoint's lease until `until`. */
  | { kind: 'busy'; until: Date | null }
  /** Disabled, deleted, or the lease was taken away (a replay, an operator). */
  | { kind: 'stopped'; reason: string; sent: number };

/** The request's webhook-id: the same for every try of the same events. */
export function webhookIdOf(events: readonly FeedEvent[], batch: boolean): string {
  const first = events[0]!.id;
  return batch ? `msg_${first}_${events.at(-1)!.id}` : `msg_${first}`;
}

export async function deliverEndpoint(
  deps: DeliveryDeps,
  endpointId: number,
  limits: DeliveryLimits = {},
): Promise<DeliveryOutcome> {
  const now = deps.now ?? (() => new Date());
  const token = randomUUID();
  const state = await acquireLease(deps.db, endpointId, token, now());
  if (!state) {
    const holder = await findDelivery(deps.db, endpointId);
    if (!holder) return { kind: 'stopped', reason: 'no such endpoint', sent: 0 };
    return { kind: 'busy', until: holder.lease_until };
  }
  try {
    return await new Delivery(deps, now, state, token, limits).run();
  } finally {
    await releaseLease(deps.db, endpointId, token).catch((err: unknown) =>
      // Not released: it lapses by itself within LEASE_MS, then any worker takes the endpoint.
      deps.log?.warn({ err, endpointId }, 'webhook lease not released; it will lapse'),
    );
  }
}

type Target = NonNullable<Awaited<ReturnType<typeof findTarget>>>;

/** One run of delivery for one endpoint, under its lease. */
class Delivery {
  private readonly lease: { endpointId: number; token: string };
  private cursor: string | null;
  private pending: string | null;
  private until: string | null;
  private resume: string | null;
  private failures: number;
  private failingSince: Date | null;
  private sent = 0;
  private readonly started = Date.now();
  /** Requests answered 2xx whose cursor move is not written yet (see flush). */
  private delivered: AttemptRecord[] = [];
  private lastFlush = Date.now();

  constructor(
    private readonly deps: DeliveryDeps,
    private readonly now: () => Date,
    private readonly state: DeliveryState,
    token: string,
    private readonly limits: DeliveryLimits,
  ) {
    this.lease = { endpointId: state.endpoint_id, token };
    this.cursor = state.after_event;
    this.pending = state.pending_last;
    this.until = state.replay_until;
    this.resume = state.replay_resume;
    this.failures = state.failures;
    this.failingSince = state.failing_since;
  }

  private get feed() {
    return this.deps.feed;
  }

  private lost(): DeliveryOutcome {
    return { kind: 'stopped', reason: 'lease lost', sent: this.sent };
  }

  private outOfTurn(): boolean {
    const { signal, maxRequests = 1_000, sliceMs = 15_000 } = this.limits;
    return signal?.aborted === true || this.sent >= maxRequests || Date.now() - this.started >= sliceMs;
  }

  /**
   * Writes the cursor past the requests answered 2xx so far, with their attempts. One write per
   * request would make Postgres's round trip half of each delivery's time; written every
   * FLUSH_MS instead (and before any other write and at the end of the run), a crash re-sends at
   * most that much, which at-least-once delivery allows. False when the lease was lost.
   */
  private async flush(): Promise<boolean> {
    if (this.delivered.length === 0) return true;
    const attempts = this.delivered;
    this.delivered = [];
    this.lastFlush = Date.now();
    return recordSuccess(this.deps.db, this.lease, attempts, this.cursor!, this.now());
  }

  private async move(to: string | null, endReplay = false): Promise<boolean> {
    if (!(await this.flush())) return false;
    if (!(await moveCursor(this.deps.db, this.lease, to, this.now(), endReplay))) return false;
    this.cursor = to;
    this.pending = null;
    if (endReplay) this.until = this.resume = null;
    return true;
  }

  async run(): Promise<DeliveryOutcome> {
    const outcome = await this.deliver();
    if (outcome.kind === 'stopped' && outcome.reason === 'lease lost') return outcome;
    return (await this.flush()) ? outcome : this.lost();
  }

  private async deliver(): Promise<DeliveryOutcome> {
    const target = await findTarget(this.deps.db, this.lease.endpointId);
    if (!target) return { kind: 'stopped', reason: 'no such endpoint', sent: 0 };
    if (this.state.status === 'disabled') return { kind: 'stopped', reason: 'disabled', sent: 0 };
    const due = this.state.next_attempt_at;
    if (due && due.getTime() > this.now().getTime()) return { kind: 'retry', at: due, sent: 0 };
    const types = expandTypes(target.types);
    if (this.state.replay_from !== null || this.state.replay_to !== null) {
      // A replay asked by time: placed in the feed here, where a scan has no statement timeout.
      const from = this.state.replay_from;
      const to = this.state.replay_to;
      const placed = from === null ? this.cursor : await this.feed.positionAt(from);
      // Never forward: a replay from after where delivery stands would skip what it has not sent yet.
      const start = this.feed.compare(placed, this.cursor) < 0 ? placed : this.cursor;
      const until = to === null ? null : await this.feed.positionAt(to);
      const r = { start, until };
      if (!(await resolveReplay(this.deps.db, this.lease, r, this.now()))) return this.lost();
      this.cursor = start;
      this.until = until;
    }
    for (;;) {
      if (this.outOfTurn()) return { kind: 'yield', sent: this.sent };
      // A replay range is sent: delivery goes back to where it stood (unless it has passed it).
      if (this.until !== null && this.feed.compare(this.cursor, this.until) >= 0) {
        const back = this.resume !== null && this.feed.compare(this.resume, this.cursor) > 0;
        if (!(await this.move(back ? this.resume : this.cursor, true))) return this.lost();
        continue;
      }
      let page: FeedPage;
      try {
        page = await this.feed.read(this.cursor, PAGE_SIZE, types);
      } catch (error) {
        if ((error as { statusCode?: number }).statusCode !== 410) throw error;
        // The events after the cursor are gone (retention): sending on would skip them silently.
        await disableDelivery(this.deps.db, this.lease.endpointId, CURSOR_EXPIRED, this.now());
        return { kind: 'stopped', reason: CURSOR_EXPIRED, sent: this.sent };
      }
      // Not past a retried request's last event (it is sent again as it was), nor a replay's end.
      const bound = this.pending ?? this.until;
      let events = page.events;
      let cut = false;
      if (bound !== null) {
        const past = events.findIndex((e) => this.feed.compare(e.id, bound) > 0);
        if (past >= 0) {
          events = events.slice(0, past);
          cut = true;
        }
      }
      if (events.length === 0) {
        // Only events the endpoint does not take, or past its bound: move over them, send nothing.
        const next = cut ? bound : page.next_cursor;
        if (next !== null && this.feed.compare(next, this.cursor) > 0) {
          const to = bound !== null && this.feed.compare(next, bound) > 0 ? bound : next;
          if (!(await this.move(to))) return this.lost();
          continue;
        }
        return { kind: 'caught-up', sent: this.sent };
      }
      const groups = target.batch ? [events.slice(0, BATCH_SIZE)] : events.map((e) => [e]);
      for (const group of groups) {
        if (this.sent > 0 && this.outOfTurn()) return { kind: 'yield', sent: this.sent };
        const stop = await this.send(target, group);
        if (stop) return stop;
      }
      // The whole page went: move over the events it scanned and filtered out after the last one sent.
      const next = page.next_cursor;
      if (!cut && next !== null && this.feed.compare(next, this.cursor) > 0) {
        const to = bound !== null && this.feed.compare(next, bound) > 0 ? bound : next;
        if (!(await this.move(to))) return this.lost();
      }
    }
  }

  /** Sends one request; an outcome that ends the run, or null to go on. */
  private async send(target: Target, events: FeedEvent[]): Promise<DeliveryOutcome | null> {
    const at = this.now();
    const body = target.batch ? JSON.stringify({ events }) : JSON.stringify(events[0]);
    const webhookId = webhookIdOf(events, target.batch);
    const secrets = [target.secret];
    // During a rotation the previous secret signs too, so a receiver holding either one verifies.
    if (target.previous_secret && target.previous_secret_until && target.previous_secret_until > at)
      secrets.push(target.previous_secret);
    const headers = signedHeaders(secrets, webhookId, Math.floor(at.getTime() / 1000), body);
    const answer = await this.deps.client.post(target.url, headers, body, this.limits.signal);
    // Cut short by a shutdown: not the receiver's failure; the next worker sends it again.
    if (answer.status === null && this.limits.signal?.aborted) return { kind: 'yield', sent: this.sent };
    const last = events.at(-1)!.id;
    const attempt: AttemptRecord = {
      webhookId,
      eventIds: events.map((e) => e.id),
      attemptedAt: at,
      status: answer.status,
      error: answer.error,
      durationMs: answer.durationMs,
      nextAttemptAt: null,
    };
    const ok = answer.status !== null && answer.status >= 200 && answer.status < 300;
    if (ok) {
      this.delivered.push(attempt);
      this.cursor = last;
      this.pending = null;
      this.failures = 0;
      this.failingSince = null;
      this.sent++;
      if (Date.now() - this.lastFlush >= FLUSH_MS && !(await this.flush())) return this.lost();
      return null;
    }
    // What went before this request is written first: the failure is recorded after it.
    if (!(await this.flush())) return this.lost();
    this.failures++;
    this.failingSince ??= at;
    const verdict = afterFailure({
      status: answer.status,
      retryAfterMs: answer.retryAfterMs,
      failures: this.failures,
      failingSince: this.failingSince,
      now: at,
      ...(this.deps.random ? { random: this.deps.random } : {}),
    });
    attempt.nextAttemptAt = verdict.kind === 'retry' ? verdict.at : null;
    const recorded = await recordFailure(
      this.deps.db,
      this.lease,
      attempt,
      {
        pendingLast: last,
        failures: this.failures,
        failingSince: this.failingSince,
        nextAttemptAt: attempt.nextAttemptAt,
        disabledReason: verdict.kind === 'disable' ? verdict.reason : null,
        lastError: describeFailure(answer),
      },
      this.now(),
    );
    if (!recorded) return this.lost();
    if (verdict.kind === 'disable') {
      this.deps.log?.warn(
        { endpointId: this.lease.endpointId, reason: verdict.reason },
        'webhook endpoint disabled',
      );
      return { kind: 'stopped', reason: verdict.reason, sent: this.sent };
    }
    return { kind: 'retry', at: verdict.at, sent: this.sent };
  }
}

/** What went wrong with a request, for the endpoint's `last_error`. */
function describeFailure(answer: ReceiverAnswer): string {
  if (answer.status === null) return answer.error ?? 'no answer';
  const text = answer.body.trim().slice(0, 200);
  return `answered ${answer.status}${answer.error ? ` (${answer.error})` : ''}${text ? `: ${text}` : ''}`;
}
