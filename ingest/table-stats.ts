import { sql } from 'kysely';
import type { Db } from '../shared/db.js';

/**
 * Planner statistics during bulk loads. A feed's tables can grow from nothing to millions of rows
 * within one run, faster than autovacuum re-analyses them; with statistics from when the table was
 * small, Postgres plans the per-batch key lookup as a scan of every row of the register country
 * (measured: 357 ms per 2,000-row batch at 1M Orgs, 15 ms after ANALYZE), so a run slows down
 * quadratically. ANALYZE samples a fixed number of rows (under a second at millions of rows) and
 * blocks no reads or writes, so it is run each time the run's inserts double, and once at the end.
 */
const FEED_TABLES = ['orgs', 'addresses', 'org_public_domains', 'locations', 'location_public_domains'];

export async function analyzeFeedTables(db: Db): Promise<void> {
  await sql`analyze ${sql.join(FEED_TABLES.map((t) => sql.table(t)))}`.execute(db);
}

export class StatsKeeper {
  private next: number;

  constructor(
    private readonly db: Db,
    firstAt = 10_000,
  ) {
    this.next = firstAt;
  }

  /** Call after each committed batch with the run's total of inserted records so far. */
  async afterBatch(insertedSoFar: number): Promise<void> {
    if (insertedSoFar < this.next) return;
    this.next = insertedSoFar * 2;
    await analyzeFeedTables(this.db);
  }
}
