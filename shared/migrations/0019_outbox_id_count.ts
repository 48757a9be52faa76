import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // Every search reads the outbox's size first (search/fresh-changes.ts: changes not yet in the
  // index are searched beside it while there are few). The count is stored with each row, so
  // that check reads no id array, even while an import's rows of 5,000 ids wait in the outbox.
  await sql`
    alter table search_outbox
    add column id_count int generated always as (cardinality(org_ids)) stored`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table search_outbox drop column id_count`.execute(db);
}
