import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

/** The two tables a register import fills row by row: their uid is computed when read. */
const TABLES = ['orgs', 'addresses'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  // `uid` was a stored generated column: bizdir_uid(id), a PL/pgSQL permutation of the id, run for
  // every inserted Org and Address, a noticeable share of the Postgres backends' CPU in the merge of
  // a first import of the register (perf; docs/journal/2026-11-26.md, 16:28). Since 0020 nothing finds
  // a row by its uid column (lookups go by id = bizdir_uid_id(uid)), so the column only echoed the id:
  // readers compute it (bizdir_uid(id) in SQL, bizdirUid in shared/domains.ts), with the same values.
  // Dropping a column is a catalog change: no row is rewritten, its space is reused as rows change.
  // Locations keep theirs (their import is bound by Node, not by Postgres; docs/imports.md).
  for (const table of TABLES) await sql`alter table ${sql.table(table)} drop column uid`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // As 0020 left them: generated and stored, without an index (this rewrites both tables).
  for (const table of TABLES)
    await sql`alter table ${sql.table(table)}
      add column uid text generated always as (bizdir_uid(id)) stored not null`.execute(db);
}
