import { sql } from 'kysely';
import type { Db } from '../../shared/db.js';
import {
  type ImportFeed,
  type ImportStatus,
  IMPORT_ROW_OUTCOMES as ROW_OUTCOMES,
  type ImportRowOutcome as RowOutcome,
} from '../../shared/tables.js';

/** Feed rows processed by all import runs, summed per feed and outcome. */
export async function importRowTotals(
  db: Db,
): Promise<Array<{ feed: ImportFeed } & Record<RowOutcome, number>>> {
  const rows = await db
    .selectFrom('import_runs')
    .select((eb) => [
      'feed',
      ...ROW_OUTCOMES.map((o) => eb.fn.coalesce(eb.fn.sum<number>(o), sql<number>`0`).as(o)),
    ])
    .groupBy('feed')
    .execute();
  return rows.map((row) => ({
    feed: row.feed,
    ...(Object.fromEntries(ROW_OUTCOMES.map((o) => [o, Number(row[o])])) as Record<RowOutcome, number>),
  }));
}

/** How many import runs there are per feed and status. */
export async function importRunCounts(
  db: Db,
): Promise<Array<{ feed: ImportFeed; status: ImportStatus; n: number }>> {
  const rows = await db
    .selectFrom('import_runs')
    .select(['feed', 'status', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy(['feed', 'status'])
    .execute();
  return rows.map((row) => ({ feed: row.feed, status: row.status, n: Number(row.n) }));
}

/** Whether any import run was ever recorded (a database without one is new). */
export async function hasImportRuns(db: Db): Promise<boolean> {
  const row = await db.selectFrom('import_runs').select('id').limit(1).executeTakeFirst();
  return row !== undefined;
}
