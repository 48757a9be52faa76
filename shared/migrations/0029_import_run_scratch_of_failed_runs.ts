import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // A run's scratch lists (the keys a location run met, the first rows of a `--full` sheet) are
  // dropped by its last step. Until now a run that failed for good kept them for ever; from now on
  // its failure drops them. These are the ones left by runs that failed (or are gone) before.
  await sql`
    delete from import_run_keys k
     where not exists (select 1 from import_runs r where r.id = k.run_id and r.status in ('queued', 'running'))`.execute(
    db,
  );
  await sql`
    delete from import_run_firsts f
     where not exists (select 1 from import_runs r where r.id = f.run_id and r.status in ('queued', 'running'))`.execute(
    db,
  );
}

export async function down(): Promise<void> {
  // Nothing to restore: the rows removed belonged to runs that can never read them.
}
