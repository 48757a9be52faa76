import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

const TABLES = ['orgs', 'locations', 'addresses', 'org_public_domains', 'location_public_domains'];

export async function up(db: Kysely<unknown>): Promise<void> {
  // The API keeps the rendered JSON of the Orgs and Locations it served in memory and drops it when
  // any of the tables they are built from changes. A NOTIFY is delivered at commit (never for a
  // rolled-back write), once per transaction however many statements send it, so every write path
  // (COPY included) is covered at the cost of one queue entry per committing transaction.
  await sql`
    create function bizdir_records_changed() returns trigger language plpgsql as $$
    begin
      perform pg_notify('bizdir_records', '');
      return null;
    end $$`.execute(db);
  for (const table of TABLES) {
    await sql`
      create trigger bizdir_records_changed
      after insert or update or delete or truncate on ${sql.table(table)}
      for each statement execute function bizdir_records_changed()`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    await sql`drop trigger if exists bizdir_records_changed on ${sql.table(table)}`.execute(db);
  }
  await sql`drop function if exists bizdir_records_changed()`.execute(db);
}
