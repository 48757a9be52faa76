import { type Selectable, sql, type Transaction } from 'kysely';
import type { Db } from '../../shared/db.js';
import type {
  Database,
  ImportFeed,
  ImportOptionsJson,
  ImportRowOutcome,
  ImportRunPartsTable,
  ImportRunsTable,
} from '../../shared/tables.js';
import { deleteRunScratch } from './import-run-keys.repository.js';
import { RunNotRunningError } from './run-fence.repository.js';

/**
 * Queries on import_runs, one Kysely chain per function: with import-parts.repository.ts (a run's
 * parts), the only modules that write import_runs and import_run_parts. A step of the run's life that is one statement is called here directly, under
 * its one name (getRun, advancePart, failRun, ...); the steps made of several statements, and the
 * rules of the run's statuses, are in import-runs.state.ts.
 */
export type ImportRun = Omit<Selectable<ImportRunsTable>, 'options'> & { options: ImportOptionsJson };
export type ImportPart = Selectable<ImportRunPartsTable>;

/** The counters a batch adds to (on the run's row and its part's). */
export type BatchCounts = Record<'rows_read' | Exclude<ImportRowOutcome, 'closed'>, number>;

/** The options column is jsonb; pg parses it, only its declared type needs the nudge. */
const asRun = <T>(row: T) => row as unknown as ImportRun;

export async function createRun(
  db: Db | Transaction<Database>,
  run: {
    feed: ImportFeed;
    source: string;
    options: ImportOptionsJson;
    scheduleName?: string | null;
    parts?: number;
  },
): Promise<ImportRun> {
  const row = await db
    .insertInto('import_runs')
    .values({
      feed: run.feed,
      source: run.source,
      // The column type wraps Json in Generated, which Kysely does not unwrap for inserts.
      options: JSON.stringify(run.options) as never,
      schedule_name: run.scheduleName ?? null,
      parts: run.parts ?? 1,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return asRun(row);
}

/** The fingerprint of the source as the schedule's last successful run read it. */
export async function lastSuccessfulFingerprint(db: Db, scheduleName: string): Promise<string | null> {
  const row = await db
    .selectFrom('import_runs')
    .select('source_fingerprint')
    .where('schedule_name', '=', scheduleName)
    .where('status', '=', 'succeeded')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.source_fingerprint ?? null;
}

/**
 * The run of one schedule slot. The unique (schedule_name, scheduled_for) index makes this the one
 * place where a slot seen twice (two workers, a retried job, a scheduler re-created after a Redis
 * flush) still yields one run: the second insert does nothing and the first run is returned.
 */
export async function insertScheduledRun(
  db: Db,
  input: {
    feed: ImportFeed;
    source: string;
    options: ImportOptionsJson;
    scheduleName: string;
    slot: Date;
    fingerprint: string | null;
    status: 'queued' | 'skipped';
  },
): Promise<{ id: number; status: ImportRun['status']; created: boolean }> {
  const now = new Date();
  const skipped = input.status === 'skipped';
  const inserted = await db
    .insertInto('import_runs')
    .values({
      feed: input.feed,
      source: input.source,
      options: JSON.stringify(input.options) as never,
      status: input.status,
      schedule_name: input.scheduleName,
      scheduled_for: input.slot,
      source_fingerprint: input.fingerprint,
      ...(skipped ? { started_at: now, finished_at: now } : {}),
    })
    .onConflict((oc) =>
      oc
        .columns(['schedule_name', 'scheduled_for'])
        .where('schedule_name', 'is not', null)
        .where('scheduled_for', 'is not', null)
        .doNothing(),
    )
    .returning(['id', 'status'])
    .executeTakeFirst();
  if (inserted) return { ...inserted, created: true };
  const existing = await db
    .selectFrom('import_runs')
    .select(['id', 'status'])
    .where('schedule_name', '=', input.scheduleName)
    .where('scheduled_for', '=', input.slot)
    .executeTakeFirstOrThrow();
  return { ...existing, created: false };
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

/**
 * The run starts (or resumes): when its first part starts, and again for its last step (merge and
 * finish). The first start time is kept across retries; a settled run stays settled (a late attempt
 * does not revive it).
 */
export async function startRun(db: Db, id: number): Promise<void> {
  await db
    .updateTable('import_runs')
    .set({
      status: 'running',
      started_at: sql<Date>`coalesce(started_at, now())`,
      error: null,
    })
    .where('id', '=', id)
    .where('status', 'in', ['queued', 'running'])
    .execute();
}

/**
 * Adds a batch's counts to its part and to the run, and moves the part's checkpoint, in the batch's own
 * transaction: after a crash the counts and checkpoint say exactly what is committed. The run's row
 * is updated last, so parallel parts hold its lock only while they commit.
 */
export async function advancePart(
  trx: Transaction<Database>,
  part: { id: number; run_id: number },
  counts: BatchCounts & { accepted: number },
  checkpointRows: number,
  bytesRead: number,
): Promise<ImportRun> {
  await trx
    .updateTable('import_run_parts')
    .set((eb) => ({
      rows_read: eb('rows_read', '+', counts.rows_read),
      accepted: eb('accepted', '+', counts.accepted),
      rejected: eb('rejected', '+', counts.rejected),
      warnings: eb('warnings', '+', counts.warnings),
      inserted: eb('inserted', '+', counts.inserted),
      updated: eb('updated', '+', counts.updated),
      unchanged: eb('unchanged', '+', counts.unchanged),
      checkpoint_rows: checkpointRows,
      bytes_read: bytesRead,
    }))
    .where('id', '=', part.id)
    .execute();
  return addRunCounts(trx, part.run_id, counts);
}

/** Adds counts to a run (a batch of a part, or a merged chunk). */
export async function addRunCounts(
  trx: Transaction<Database>,
  id: number,
  counts: Partial<BatchCounts> & { merged?: number; mergeAfter?: string },
): Promise<ImportRun> {
  const row = await trx
    .updateTable('import_runs')
    .set((eb) => ({
      rows_read: eb('rows_read', '+', counts.rows_read ?? 0),
      inserted: eb('inserted', '+', counts.inserted ?? 0),
      updated: eb('updated', '+', counts.updated ?? 0),
      unchanged: eb('unchanged', '+', counts.unchanged ?? 0),
      rejected: eb('rejected', '+', counts.rejected ?? 0),
      warnings: eb('warnings', '+', counts.warnings ?? 0),
      duplicates: eb('duplicates', '+', counts.duplicates ?? 0),
      merged_rows: eb('merged_rows', '+', counts.merged ?? 0),
      ...(counts.mergeAfter !== undefined ? { merge_after: counts.mergeAfter } : {}),
      // The run's checkpoint is the sum of its parts' (what `imports list` has always shown).
      checkpoint_rows: eb('checkpoint_rows', '+', counts.rows_read ?? 0),
    }))
    .where('id', '=', id)
    // A batch or chunk of a run failed meanwhile writes nothing (its transaction rolls back).
    .where('status', '=', 'running')
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new RunNotRunningError(id);
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
    .where('status', '=', 'running')
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new RunNotRunningError(id);
  return asRun(row);
}

/**
 * The run failed for good (a no-op on a settled run: a late failure report must not undo a success).
 * Its scratch lists go with it, in the same transaction: nothing can need them again, since an
 * attempt still going on writes nothing more once the run is failed (run-fence.repository.ts), and a
 * retry of its job finds the run settled and does nothing. True when this call failed it.
 */
export async function failRun(db: Db | Transaction<Database>, id: number, error: string): Promise<boolean> {
  const fail = async (trx: Transaction<Database>) => {
    const row = await trx
      .updateTable('import_runs')
      .set({ status: 'failed', error: error.slice(0, 2000), finished_at: new Date() })
      .where('id', '=', id)
      .where('status', 'in', ['queued', 'running'])
      .returning('id')
      .executeTakeFirst();
    if (row) await deleteRunScratch(trx, id);
    return row !== undefined;
  };
  return db.isTransaction ? fail(db as Transaction<Database>) : db.transaction().execute(fail);
}

/** Notes why an attempt of the run failed while the job will be retried; the status stays as it is. */
export async function noteRunRetry(db: Db, id: number, error: string): Promise<void> {
  await db
    .updateTable('import_runs')
    .set({ error: `attempt failed, will retry: ${error}`.slice(0, 2000) })
    .where('id', '=', id)
    // A settled run keeps the reason it settled with.
    .where('status', 'in', ['queued', 'running'])
    .execute();
}
