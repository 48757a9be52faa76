import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // A run reads one or more sources (the register ships as one file or as 7 parts); each is a part,
  // read by its own job (any worker), with its own checkpoint and counters. The run's row holds the
  // totals; the parts say where each source got to.
  await sql`
    create table import_run_parts (
      id bigint generated always as identity primary key,
      run_id bigint not null references import_runs (id),
      part_no integer not null,
      source text not null,
      -- the CSV inside a zip that holds several (null: the source is one CSV)
      entry text,
      status text not null default 'queued' check (status in ('queued', 'running', 'succeeded', 'failed')),
      job_id text,
      rows_read bigint not null default 0,
      accepted bigint not null default 0,
      rejected bigint not null default 0,
      warnings bigint not null default 0,
      inserted bigint not null default 0,
      updated bigint not null default 0,
      unchanged bigint not null default 0,
      checkpoint_rows bigint not null default 0,
      bytes_read bigint not null default 0,
      bytes_total bigint,
      error text,
      started_at timestamptz,
      finished_at timestamptz,
      unique (run_id, part_no)
    )`.execute(db);
  // A staged run (the register) merges its parts after all of them are read: how far the merge got
  // (the last company number merged, in the merge's order) and how many rows it merged, written with
  // each merged chunk so a resumed merge goes on from there.
  await sql`
    alter table import_runs
      add column merge_after text,
      add column merged_rows bigint not null default 0,
      add column parts integer not null default 1`.execute(db);
  // Which part a rejected row or warning came from (line numbers are per source).
  await sql`alter table import_rejects add column part_no integer not null default 1`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table import_rejects drop column if exists part_no`.execute(db);
  await sql`
    alter table import_runs drop column if exists merge_after, drop column if exists merged_rows,
      drop column if exists parts`.execute(db);
  await sql`drop table if exists import_run_parts`.execute(db);
}
