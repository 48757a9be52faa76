import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // What an account asked for (POST /v1/webhook_endpoints); written only by the API's endpoint
  // repository. The secret is kept as issued: signing needs it, and it is never shown again. During a
  // rotation the previous secret signs beside the new one until `previous_secret_until`.
  await sql`
    create table webhook_endpoints (
      id bigint generated always as identity primary key,
      uid text generated always as (bizdir_uid(id)) stored not null unique,
      account_id bigint not null references accounts (id),
      url text not null,
      types text[] not null,
      batch boolean not null default false,
      secret text not null,
      previous_secret text,
      previous_secret_until timestamptz,
      created_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index webhook_endpoints_account on webhook_endpoints (account_id)`.execute(db);

  // Delivery state, one row per endpoint; written only by the delivery repository (webhooks/).
  // `after_event` is the endpoint's cursor: the id of the last event delivered (or passed over by its
  // type filter), advanced only after a 2xx; null: from the oldest event retained. While a request
  // fails, `pending_last` is the last event it carried, so its retries carry the same events (and the
  // same webhook-id). A replay moves the cursor back; with an end (`replay_until`, a cursor), delivery
  // goes on from `replay_resume` once the range is sent. A replay asked by time (`replay_from`,
  // `replay_to`) is turned into those cursors by the worker, which has no statement timeout: finding
  // a time in the feed may scan it. The lease makes one worker at a time deliver to an endpoint,
  // whatever the queue holds.
  await sql`
    create table webhook_deliveries (
      endpoint_id bigint primary key references webhook_endpoints (id) on delete cascade,
      status text not null default 'active' check (status in ('active', 'failing', 'disabled')),
      disabled_reason text,
      after_event text,
      pending_last text,
      replay_from timestamptz,
      replay_to timestamptz,
      replay_until text,
      replay_resume text,
      failures integer not null default 0,
      failing_since timestamptz,
      next_attempt_at timestamptz,
      last_error text,
      last_success_at timestamptz,
      lease_token uuid,
      lease_until timestamptz,
      updated_at timestamptz not null default now()
    )`.execute(db);

  // Each request made to a receiver (GET …/deliveries), kept for a few days; same writer.
  await sql`
    create table webhook_attempts (
      id bigint generated always as identity primary key,
      endpoint_id bigint not null references webhook_endpoints (id) on delete cascade,
      webhook_id text not null,
      event_ids text[] not null,
      attempted_at timestamptz not null,
      status integer,
      error text,
      duration_ms integer not null,
      next_attempt_at timestamptz
    )`.execute(db);
  await sql`create index webhook_attempts_endpoint on webhook_attempts (endpoint_id, id desc)`.execute(db);
  await sql`create index webhook_attempts_age on webhook_attempts (attempted_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['webhook_attempts', 'webhook_deliveries', 'webhook_endpoints']) {
    await sql`drop table if exists ${sql.table(table)}`.execute(db);
  }
}
