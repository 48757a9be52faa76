import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // import_run_keys is a run's scratch list (emptied when the run ends). Its foreign key made every
  // key row fire a check against import_runs, whose row the same run updates after each batch:
  // measured, half the cost of recording a batch's keys. Runs are never deleted while they hold keys.
  await sql`alter table import_run_keys drop constraint if exists import_run_keys_run_id_fkey`.execute(db);
  // No query filters or sorts on these wide columns, so planner statistics on them are never used,
  // yet ANALYZE (autovacuum's too) spent most of its time there (docs/journal/2026-11-22.md, 04:36).
  await sql`
    alter table locations
      alter column phones set statistics 0, alter column hours set statistics 0,
      alter column links set statistics 0, alter column description set statistics 0,
      alter column categories set statistics 0, alter column labels set statistics 0`.execute(db);
  // The fingerprint of the sheet row (and sheet header) a Location was last written from, or found
  // unchanged by. A re-import meeting the same row again knows at once that nothing changed and
  // skips merging and hashing it. Null when that row produced warnings (they are reported again).
  await sql`alter table locations add column source_fingerprint text`.execute(db);
  // A `--full` location sheet is an Org's whole list, so its order says which Location comes first:
  // the first row of each Org in the sheet, kept per run (in the batch's transaction, so a resumed
  // run knows it) until the run settles the Orgs' default Locations at its end.
  await sql`
    create table import_run_firsts (
      run_id bigint not null,
      org_id bigint not null,
      code text not null,
      line integer not null,
      primary key (run_id, org_id)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists import_run_firsts`.execute(db);
  await sql`alter table locations drop column if exists source_fingerprint`.execute(db);
  await sql`
    alter table locations
      alter column phones set statistics -1, alter column hours set statistics -1,
      alter column links set statistics -1, alter column description set statistics -1,
      alter column categories set statistics -1, alter column labels set statistics -1`.execute(db);
  await sql`
    alter table import_run_keys add constraint import_run_keys_run_id_fkey
      foreign key (run_id) references import_runs (id)`.execute(db);
}
