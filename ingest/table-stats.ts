import { sql } from 'kysely';
import type { Db } from '../shared/db.js';
import type { Database } from '../shared/tables.js';

/**
 * Planner statistics during bulk loads. A feed's tables can grow from nothing to millions of rows
 * within one run, faster than autovacuum re-analyses them; with statistics from when the table was
 * small, Postgres plans the per-batch key lookup as a scan of every row of the register country
 * (measured: 357 ms per 2,000-row batch at 1M Orgs, 15 ms after ANALYZE), so a run slows down
 * quadratically. So a run analyses its feed's lookup columns each time its inserts double, and once
 * at the end.
 *
 * Only the columns the per-batch lookups filter on: ANALYZE samples the same number of rows either
 * way, but computing statistics for every column of a wide table is what costs (measured at 100,000
 * Locations: 1.45 s for the whole table with its jsonb columns, 0.11 s for `(org_id, code)`).
 * Autovacuum still analyses whole tables in the background.
 */
export type LookupColumns = Readonly<{ [T in keyof Database]?: readonly (keyof Database[T] & string)[] }>;

export async function analyzeLookupColumns(db: Db, lookups: LookupColumns): Promise<void> {
  const targets = Object.entries(lookups).map(
    ([table, columns]) => sql`${sql.table(table)} (${sql.join((columns ?? []).map((c) => sql.ref(c)))})`,
  );
  if (targets.length > 0) await sql`analyze ${sql.join(targets)}`.execute(db);
}

export class StatsKeeper {
  private next: number;

  constructor(
    private readonly db: Db,
    private readonly lookups: LookupColumns,
    firstAt = 10_000,
  ) {
    this.next = firstAt;
  }

  /** Call after each committed batch with the run's total of inserted records so far. */
  async afterBatch(insertedSoFar: number): Promise<void> {
    if (insertedSoFar < this.next) return;
    this.next = insertedSoFar * 2;
    await analyzeLookupColumns(this.db, this.lookups);
  }

  /** Call once at the end of a run that wrote anything. */
  async afterRun(): Promise<void> {
    await analyzeLookupColumns(this.db, this.lookups);
  }
}
