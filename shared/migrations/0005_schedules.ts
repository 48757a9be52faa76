import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // Recurring feed imports. Postgres is the truth; BullMQ job schedulers are reconciled from this
  // table whenever workers start, so a Redis flush loses nothing.
  await sql`
    create table import_schedules (
      name text primary key check (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'),
      feed text not null check (feed in ('registrar', 'locations')),
      source text not null,
      cron text not null,
      tz text not null default 'UTC',
      options jsonb not null default '{}'::jsonb,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`.execute(db);

  // What the source looked like when a run read it (size + checksum, or HTTP validators): a
  // scheduled run whose source matches the last successful run's is recorded as skipped.
  await sql`alter table import_runs add column source_fingerprint text`.execute(db);
  // The schedule slot a run belongs to. Unique per schedule, so however many workers see the same
  // firing (or a scheduler re-created after a Redis flush fires a slot again), one run exists.
  await sql`alter table import_runs add column scheduled_for timestamptz`.execute(db);
  await sql`create unique index import_runs_schedule_slot on import_runs (schedule_name, scheduled_for)
            where schedule_name is not null and scheduled_for is not null`.execute(db);
  await sql`create index import_runs_schedule_created on import_runs (schedule_name, created_at desc)
            where schedule_name is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists import_runs_schedule_created`.execute(db);
  await sql`drop index if exists import_runs_schedule_slot`.execute(db);
  await sql`alter table import_runs drop column if exists scheduled_for`.execute(db);
  await sql`alter table import_runs drop column if exists source_fingerprint`.execute(db);
  await sql`drop table if exists import_schedules`.execute(db);
}
