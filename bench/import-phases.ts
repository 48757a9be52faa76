import { sql } from 'kysely';
import type { Db } from '../shared/db.js';

/**
 * How long a run's parts took to be read and staged: from the first part's start to the last one's
 * end (parts are read before the run merges). What is left of the import's time is the merge and the
 * settle. `runId` omitted: the newest run (a benchmark's own database holds only its runs).
 */
export async function partsReadMs(db: Db, runId?: number): Promise<number> {
  const { rows } = await sql<{ read: number | null }>`
    select extract(epoch from max(finished_at) - min(started_at)) * 1000 as read
    from import_run_parts
    where run_id = ${runId === undefined ? sql`(select max(id) from import_runs)` : sql`${runId}`}`.execute(
    db,
  );
  return Number(rows[0]?.read ?? 0);
}
