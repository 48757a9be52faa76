import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // A location import analyses `locations (org_id, code)` each time its inserts double (see
  // ingest/table-stats.ts), so the per-batch (Org, store code) join keeps its index plan. ANALYZE
  // samples 300 rows per unit of the largest statistics target among the columns it is given: at
  // the default 100 that is 30,000 rows, most of a first import's 100,000-row table, five times a
  // run (a large share of a first import's Postgres CPU: docs/journal/2026-11-24.md, before 21:23). The join needs only the
  // row count and the keys' distinct counts, which 3,000 rows estimate as well (the other lookups on
  // them are equality on indexed keys). Autovacuum's whole-table ANALYZE keeps the default for the others.
  await sql`
    alter table locations alter column org_id set statistics 10, alter column code set statistics 10`.execute(
    db,
  );
  // Each batch of a location import moves the clash counter of every name it hands a label for (the
  // bases of a chain's Locations in one city repeat in every batch). With full pages each such update
  // goes to another page and into the primary key again; with room left on the page it is a HOT
  // update. Applies to pages written from now on.
  await sql`alter table public_slug_counters set (fillfactor = 70)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table public_slug_counters reset (fillfactor)`.execute(db);
  await sql`
    alter table locations alter column org_id set statistics -1, alter column code set statistics -1`.execute(
    db,
  );
}
