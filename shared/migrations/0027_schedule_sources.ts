import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // A schedule reads several sources (the register's parts), each possibly a template of the date
  // (`…-{yyyy}-{mm}-01-part{1..7}_7.zip`), kept as written and resolved at each firing.
  await sql`alter table import_schedules add column sources text[]`.execute(db);
  await sql`update import_schedules set sources = array[source]`.execute(db);
  await sql`alter table import_schedules alter column sources set not null`.execute(db);
  await sql`alter table import_schedules drop column source`.execute(db);

  // What a firing does: import a feed, or rebuild the search index (`bizdir reindex`), or compare
  // it with Postgres (`bizdir reindex --verify`). Only an import has a feed and sources.
  await sql`alter table import_schedules
              add column job text not null default 'import'
              check (job in ('import', 'reindex', 'reindex-verify'))`.execute(db);
  await sql`alter table import_schedules alter column feed drop not null`.execute(db);
  // A reindex schedule with a threshold rebuilds only once the index's file has grown past this
  // multiple of its size right after the last build (per document).
  await sql`alter table import_schedules
              add column when_grown double precision check (when_grown > 1 and when_grown <= 100)`.execute(
    db,
  );
  await sql`alter table import_schedules add constraint import_schedules_job_shape check (
              case when job = 'import' then feed is not null and cardinality(sources) between 1 and 100
                                            and when_grown is null
                   else feed is null and cardinality(sources) = 0
                        and (job = 'reindex' or when_grown is null) end)`.execute(db);

  // One row per firing of a reindex schedule, as import_runs holds the firings of import schedules:
  // what `schedule list` shows as its last run. Unique per slot, so however many workers see one
  // firing, one rebuild is queued.
  await sql`
    create table schedule_reindex_runs (
      id integer generated always as identity primary key,
      schedule_name text not null,
      scheduled_for timestamptz not null,
      job text not null check (job in ('reindex', 'reindex-verify')),
      status text not null default 'queued'
        check (status in ('queued', 'running', 'succeeded', 'failed', 'skipped')),
      job_id text,
      -- Why it was skipped, why it failed, or what it found.
      reason text,
      result jsonb,
      created_at timestamptz not null default now(),
      started_at timestamptz,
      finished_at timestamptz,
      unique (schedule_name, scheduled_for)
    )`.execute(db);

  // The search index's size on disk right after each build (a `bizdir reindex`, a catch-up after an
  // import): a reindex schedule with a growth threshold compares the index's size now with it.
  await sql`
    create table index_build_sizes (
      id integer generated always as identity primary key,
      index_uid text not null,
      documents bigint not null,
      bytes bigint not null,
      measured_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index index_build_sizes_latest on index_build_sizes (index_uid, id desc)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists index_build_sizes`.execute(db);
  await sql`drop table if exists schedule_reindex_runs`.execute(db);
  await sql`delete from import_schedules where job <> 'import'`.execute(db);
  await sql`alter table import_schedules drop constraint if exists import_schedules_job_shape`.execute(db);
  await sql`alter table import_schedules alter column feed set not null`.execute(db);
  await sql`alter table import_schedules drop column when_grown`.execute(db);
  await sql`alter table import_schedules drop column job`.execute(db);
  await sql`alter table import_schedules add column source text`.execute(db);
  // A schedule of several sources keeps only its first: the earlier schema held one.
  await sql`update import_schedules set source = sources[1]`.execute(db);
  await sql`alter table import_schedules alter column source set not null`.execute(db);
  await sql`alter table import_schedules drop column sources`.execute(db);
}
