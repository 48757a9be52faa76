import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // The key of the record a rejected row names, when it can be read from the row (the register: its
  // company number, normalized). A `--full` register run counts such a company as present: its row is
  // in the file, only not loadable, so the company has not left the register. Stored with the reject,
  // in the batch's transaction, so it survives what the unlogged staging table does not (a crash) and
  // is deleted with the part's rejects when the part is read again. A catalog change: no row rewritten.
  await sql`alter table import_rejects add column record_key text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table import_rejects drop column if exists record_key`.execute(db);
}
