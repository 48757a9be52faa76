import { type Selectable, sql, type Transaction } from 'kysely';
import type { Database, ImportFeed, ImportOptionsJson, ImportRunsTable } from '../shared/database.js';
import type { Db } from '../shared/db.js';

/** Queries on import_runs, one Kysely chain per function; the logic lives in run-import.ts. */
export type ImportRun = Omit<Selectable<ImportRunsTable>, 'options'> & { options: ImportOptionsJson };

export interface BatchCounts {
  rows_read: number;
  inserted: number;
  updated: number;
  unchanged: number;
  rejected: number;
  warnings: number;
  duplicates: number;
}

/** The options column is jsonb; pg parses it, only its declared type needs the nudge. */
const asRun = <T>(row: T) => row as unknown as ImportRun;

export const ZERO_COUNTS: BatchCounts = {
  rows_read: 0,
  inserted: 0,
  updated: 0,
  unchanged: 0,
  rejected: 0,
  warnings: 0,
  duplicates: 0,
};

export async function createRun(
  db: Db,
  run: { feed: ImportFeed; source: string; options: ImportOptionsJson; scheduleName?: string | null },
): Promise<ImportRun> {
  const row = await db
    .insertInto('import_runs')
    .values({
      feed: run.feed,
      source: run.source,
      // The column type wraps Json in Generated, which Kysely does not unwrap for inserts.
      options: JSON.stringify(run.options) as never,
      schedule_name: run.scheduleName ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return asRun(row);
}

export async function setRunJobId(db: Db, id: number, jobId: string): Promise<void> {
  await db.updateTable('import_runs').set({ job_id: jobId }).where('id', '=', id).execute();
}

export async function getRun(db: Db | Transaction<Database>, id: number): Promise<ImportRun | undefined> {
  const row = await db.selectFrom('import_runs').selectAll().where('id', '=', id).executeTakeFirst();
  return row && asRun(row);
}

export async function listRuns(db: Db, limit: number): Promise<ImportRun[]> {
  const rows = await db.selectFrom('import_runs').selectAll().orderBy('id', 'desc').limit(limit).execute();
  return rows.map(asRun);
}

/** Starts (or resumes) a run; the first start time is kept across retries. */
export async function markRunning(db: Db, id: number, bytesTotal: number | null): Promise<void> {
  await db
    .updateTable('import_runs')
    .set({
      status: 'running',
      started_at: sql<Date>`coalesce(started_at, now())`,
      bytes_total: bytesTotal,
      error: null,
    })
    .where('id', '=', id)
    .execute();
}

/**
 * Adds a batch's counts and moves the checkpoint, in the batch's own transaction: after a crash the
 * counts and checkpoint say exactly what is committed.
 */
export async function recordBatch(
  trx: Transaction<Database>,
  id: number,
  counts: BatchCounts,
  checkpointRows: number,
  bytesRead: number,
): Promise<ImportRun> {
  const row = await trx
    .updateTable('import_runs')
    .set((eb) => ({
      rows_read: eb('rows_read', '+', counts.rows_read),
      inserted: eb('inserted', '+', counts.inserted),
      updated: eb('updated', '+', counts.updated),
      unchanged: eb('unchanged', '+', counts.unchanged),
      rejected: eb('rejected', '+', counts.rejected),
      warnings: eb('warnings', '+', counts.warnings),
      duplicates: eb('duplicates', '+', counts.duplicates),
      checkpoint_rows: checkpointRows,
      bytes_read: bytesRead,
    }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return asRun(row);
}

export async function markSucceeded(
  trx: Transaction<Database>,
  id: number,
  closed: number,
  bytesRead: number,
): Promise<ImportRun> {
  const row = await trx
    .updateTable('import_runs')
    .set({ status: 'succeeded', closed, bytes_read: bytesRead, finished_at: new Date(), error: null })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return asRun(row);
}

/** Marks a run failed unless it already finished (a late failure report must not undo a success). */
export async function markFailed(db: Db, id: number, error: string): Promise<void> {
  await db
    .updateTable('import_runs')
    .set({ status: 'failed', error: error.slice(0, 2000), finished_at: new Date() })
    .where('id', '=', id)
    .where('status', 'in', ['queued', 'running'])
    .execute();
}

/** Notes why an attempt failed while the job will be retried; the status stays as it is. */
export async function noteAttemptError(db: Db, id: number, error: string): Promise<void> {
  await db
    .updateTable('import_runs')
    .set({ error: `attempt failed, will retry: ${error}`.slice(0, 2000) })
    .where('id', '=', id)
    .execute();
}
