import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // The keys (e.g. company numbers) an import run has loaded so far. It is written in the same
  // transaction as each batch, so after a crash and retry it tells exactly which keys the run has
  // seen: a later row with the same key is a duplicate (counted once), and a `--full` run closes the
  // records whose key is missing. Logged on purpose: an unlogged table is emptied by a server crash
  // while the run's checkpoint survives, and `--full` would then close live records.
  await sql`
    create table import_run_keys (
      run_id bigint not null references import_runs (id),
      key text not null,
      primary key (run_id, key)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists import_run_keys`.execute(db);
}
