import {
  type Kysely,
  type QueryCreator,
  type Selectable,
  sql,
  type Transaction,
  type Updateable,
} from 'kysely';
import type { Db } from '../shared/db.js';
import type { Database, WebhookDeliveriesTable, WebhookStatus } from '../shared/tables.js';

/**
 * The only writer of webhook_deliveries (each endpoint's delivery state: cursor, retries, lease) and
 * webhook_attempts (the requests made). Every write made while delivering is conditional on the
 * lease it was made under: a worker that lost its lease (it stalled past it, or a replay or an
 * operator took it away) changes nothing.
 */

export type DeliveryState = Selectable<WebhookDeliveriesTable>;

/** The reason an operator's disabling gives; a replay does not enable such an endpoint again. */
export const OPERATOR_DISABLED = 'disabled by an operator';

/** How long a lease lasts without renewal; every write made under it renews it. */
export const LEASE_MS = 30_000;

const leaseEnd = (now: Date) => new Date(now.getTime() + LEASE_MS);

/** The CTE that turns synchronous_commit off for the statement's transaction (see above). */
const asyncCommit = (db: QueryCreator<Database>) =>
  db.selectNoFrom(sql<string>`set_config('synchronous_commit', 'off', true)`.as('sc'));

/** A new endpoint's state: delivery starts after `after` (the feed's end when it was created). */
export async function startDelivery(trx: Transaction<Database>, endpointId: number, after: string | null) {
  await trx
    .insertInto('webhook_deliveries')
    .values({ endpoint_id: endpointId, after_event: after })
    .execute();
}

/**
 * Takes the endpoint's lease for `token` when nobody holds it (or its holder let it lapse);
 * the state under it, or undefined when another worker holds it (or the endpoint is gone).
 */
export async function acquireLease(db: Db, endpointId: number, token: string, now: Date) {
  return db
    .updateTable('webhook_deliveries')
    .set({ lease_token: token, lease_until: leaseEnd(now) })
    .where('endpoint_id', '=', endpointId)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
    .returningAll()
    .executeTakeFirst();
}

/** The state of an endpoint's delivery, whoever holds its lease. */
export async function findDelivery(db: Kysely<Database>, endpointId: number) {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .executeTakeFirst();
}

export async function releaseLease(db: Db, endpointId: number, token: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ lease_token: null, lease_until: null })
    .where('endpoint_id', '=', endpointId)
    .where('lease_token', '=', token)
    .execute();
}

/** What a request was and how it went, for GET …/deliveries. */
export interface AttemptRecord {
  webhookId: string;
  eventIds: string[];
  attemptedAt: Date;
  status: number | null;
  error: string | null;
  durationMs: number;
  nextAttemptAt: Date | null;
}

const attemptRow = (endpointId: number, a: AttemptRecord) => ({
  endpoint_id: endpointId,
  webhook_id: a.webhookId,
  event_ids: a.eventIds,
  attempted_at: a.attemptedAt,
  status: a.status,
  error: a.error,
  duration_ms: a.durationMs,
  next_attempt_at: a.nextAttemptAt,
});

/**
 * A write made while delivering: applies `set` and renews the lease, with synchronous_commit off (a
 * lost commit only repeats a request, which carries the same webhook-id), and records `attempts` in
 * the same statement. False when the lease was lost: nothing changed.
 */
async function writeUnderLease(
  db: Db,
  lease: { endpointId: number; token: string },
  now: Date,
  set: Updateable<WebhookDeliveriesTable>,
  attempts: readonly AttemptRecord[] = [],
): Promise<boolean> {
  const rows = attempts.map((a) => attemptRow(lease.endpointId, a));
  const withMode = db.with('commit_mode', asyncCommit);
  // The attempts' CTE is not named by the update: typed as the query without it.
  const qc =
    rows.length > 0
      ? (withMode.with('attempt', (q) =>
          q.insertInto('webhook_attempts').values(rows),
        ) as unknown as typeof withMode)
      : withMode;
  const row = await qc
    .updateTable('webhook_deliveries')
    .set({ ...set, lease_until: leaseEnd(now), updated_at: now })
    .where('endpoint_id', '=', lease.endpointId)
    .where('lease_token', '=', lease.token)
    // A CTE that only selects runs only when the statement refers to it.
    .where((eb) => eb.exists(eb.selectFrom('commit_mode').select('sc')))
    .returning('endpoint_id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Requests answered 2xx: the cursor moves to the last event of the last one, the failure streak
 * ends, the attempts are recorded (one statement). False when the lease was lost: nothing changed.
 */
export async function recordSuccess(
  db: Db,
  lease: { endpointId: number; token: string },
  attempts: readonly AttemptRecord[],
  advanceTo: string,
  now: Date,
): Promise<boolean> {
  return writeUnderLease(
    db,
    lease,
    now,
    {
      after_event: advanceTo,
      pending_last: null,
      status: 'active',
      failures: 0,
      failing_since: null,
      next_attempt_at: null,
      last_error: null,
      last_success_at: now,
    },
    attempts,
  );
}

export interface FailureUpdate {
  pendingLast: string;
  failures: number;
  failingSince: Date;
  /** The next try, or null when the endpoint is disabled. */
  nextAttemptAt: Date | null;
  disabledReason: string | null;
  lastError: string;
}

/** A request failed: the streak, the next try (or disabling) and the attempt, in one statement. */
export async function recordFailure(
  db: Db,
  lease: { endpointId: number; token: string },
  attempt: AttemptRecord,
  f: FailureUpdate,
  now: Date,
): Promise<boolean> {
  const status: WebhookStatus = f.disabledReason ? 'disabled' : 'failing';
  return writeUnderLease(
    db,
    lease,
    now,
    {
      pending_last: f.pendingLast,
      status,
      disabled_reason: f.disabledReason,
      failures: f.failures,
      failing_since: f.failingSince,
      next_attempt_at: f.nextAttemptAt,
      last_error: f.lastError,
    },
    [attempt],
  );
}

/**
 * Moves the cursor without a request: past events the endpoint's types filter out, or, at the end of
 * a replay range, back to where delivery stood before the replay (`endReplay`). A request pending
 * retry is never passed over this way (the caller stops at it), so none is pending after it.
 */
export async function moveCursor(
  db: Db,
  lease: { endpointId: number; token: string },
  to: string | null,
  now: Date,
  endReplay = false,
): Promise<boolean> {
  return writeUnderLease(db, lease, now, {
    after_event: to,
    pending_last: null,
    ...(endReplay ? { replay_until: null, replay_resume: null } : {}),
  });
}

/** A replay: from an event id (`after`) or a time (`from`), optionally up to a time (`to`). */
export interface ReplayRequest {
  after?: string;
  from?: Date;
  to?: Date;
}

/**
 * Rewinds an endpoint for a replay, taking any lease away (a delivery running now stops at its next
 * write). `after` moves the cursor at once; a time is left for the worker to place in the feed
 * (`resolveReplay`). With `to`, delivery goes back to `resume` once the range is sent. An endpoint
 * disabled by its failures is enabled again; one disabled by an operator is not (the caller checks).
 * Runs in the caller's transaction, after `lockDelivery`.
 */
export async function rewind(
  trx: Transaction<Database>,
  endpointId: number,
  r: ReplayRequest & { current: string | null; resume: string | null },
  now: Date,
): Promise<void> {
  await trx
    .updateTable('webhook_deliveries')
    .set({
      after_event: r.after ?? r.current,
      replay_from: r.from ?? null,
      replay_to: r.to ?? null,
      replay_until: null,
      replay_resume: r.to ? r.resume : null,
      pending_last: null,
      status: 'active',
      disabled_reason: null,
      failures: 0,
      failing_since: null,
      next_attempt_at: null,
      last_error: null,
      lease_token: null,
      lease_until: null,
      updated_at: now,
    })
    .where('endpoint_id', '=', endpointId)
    .execute();
}

/** A replay asked by time, placed in the feed by the worker: the cursor it starts after and ends at. */
export async function resolveReplay(
  db: Db,
  lease: { endpointId: number; token: string },
  r: { start: string | null; until: string | null },
  now: Date,
): Promise<boolean> {
  const row = await db
    .updateTable('webhook_deliveries')
    .set({
      after_event: r.start,
      replay_until: r.until,
      replay_from: null,
      replay_to: null,
      lease_until: leaseEnd(now),
      updated_at: now,
    })
    .where('endpoint_id', '=', lease.endpointId)
    .where('lease_token', '=', lease.token)
    .returning('endpoint_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** The delivery state, locked for the rest of the transaction (a replay reads, then rewinds). */
export async function lockDelivery(trx: Transaction<Database>, endpointId: number) {
  return trx
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .forUpdate()
    .executeTakeFirst();
}

/** Disables an endpoint (an operator's decision) and takes its lease away; false when there is none. */
export async function disableDelivery(
  db: Db,
  endpointId: number,
  reason: string,
  now: Date,
): Promise<boolean> {
  const row = await db
    .updateTable('webhook_deliveries')
    .set({
      status: 'disabled',
      disabled_reason: reason,
      next_attempt_at: null,
      lease_token: null,
      lease_until: null,
      updated_at: now,
    })
    .where('endpoint_id', '=', endpointId)
    .returning('endpoint_id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Enables a disabled endpoint again (an operator's decision): delivery goes on from its cursor, the
 * failed request first; false when there is none.
 */
export async function enableDelivery(db: Db, endpointId: number, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('webhook_deliveries')
    .set({
      status: 'active',
      disabled_reason: null,
      failures: 0,
      failing_since: null,
      next_attempt_at: null,
      updated_at: now,
    })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'disabled')
    .returning('endpoint_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Endpoints that may be delivered to now (not disabled, no retry pending later, no live lease). */
export async function dueDeliveries(db: Db, now: Date) {
  return db
    .selectFrom('webhook_deliveries')
    .select(['endpoint_id', 'after_event', 'replay_from', 'replay_to', 'replay_until'])
    .where('status', '!=', 'disabled')
    .where((eb) => eb.or([eb('next_attempt_at', 'is', null), eb('next_attempt_at', '<=', now)]))
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
    .execute();
}

/** What a delivery needs of an endpoint's configuration (read; the API's repository writes it). */
export async function findTarget(db: Db, endpointId: number) {
  return db
    .selectFrom('webhook_endpoints')
    .select(['id', 'url', 'types', 'batch', 'secret', 'previous_secret', 'previous_secret_until'])
    .where('id', '=', endpointId)
    .executeTakeFirst();
}

/** The latest requests made to an endpoint, newest first. */
export async function listAttempts(db: Db, endpointId: number, limit: number) {
  return db
    .selectFrom('webhook_attempts')
    .select(['webhook_id', 'event_ids', 'attempted_at', 'status', 'error', 'duration_ms', 'next_attempt_at'])
    .where('endpoint_id', '=', endpointId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** Forgets requests made before `before` (GET …/deliveries shows recent ones). */
export async function pruneAttempts(db: Db, before: Date): Promise<number> {
  const result = await db
    .deleteFrom('webhook_attempts')
    .where('attempted_at', '<', before)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
