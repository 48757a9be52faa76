import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // A monthly register re-import updates a few percent of Orgs and their registered addresses in
  // place. With full pages every such update is written to a new page and inserted into each of the
  // table's indexes again (orgs has five, addresses two). A tenth of each page left free lets the
  // update stay on its page as a HOT update (no index writes) when no indexed value changes, which is
  // the common case (an address, a status). Applies to pages written from now on.
  await sql`alter table orgs set (fillfactor = 90)`.execute(db);
  await sql`alter table addresses set (fillfactor = 90)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table orgs reset (fillfactor)`.execute(db);
  await sql`alter table addresses reset (fillfactor)`.execute(db);
}
