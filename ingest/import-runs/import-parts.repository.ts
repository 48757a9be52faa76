import type { Transaction } from 'kysely';
import { sql } from 'kysely';
import type { Db } from '../../shared/db.js';
import type { Database } from '../../shared/tables.js';
import type { ImportPart } from './import-runs.repository.js';

/**
 * Queries on import_run_parts (and the run totals a part's restart takes back), one Kysely chain per
 * function: with import-runs.repository.ts, the only writers of a run's parts.
 */
/** Adds merge counts to the parts whose rows won (inserted, updated, unchanged). */
export async function addPartMergeCounts(
  trx: Transaction<Database>,
  runId: number,
  byPart: ReadonlyMap<number, { inserted: number; updated: number; unchanged: number }>,
): Promise<void> {
  for (const [partNo, c] of byPart) {
    await trx
      .updateTable('import_run_parts')
      .set((eb) => ({
        inserted: eb('inserted', '+', c.inserted),
        updated: eb('updated', '+', c.updated),
        unchanged: eb('unchanged', '+', c.unchanged),
      }))
      .where('run_id', '=', runId)
      .where('part_no', '=', partNo)
      .execute();
  }
}

export async function insertParts(
  db: Db | Transaction<Database>,
  runId: number,
  parts: readonly { source: string; entry: string | null }[],
): Promise<ImportPart[]> {
  if (parts.length === 0) return [];
  return db
    .insertInto('import_run_parts')
    .values(parts.map((p, i) => ({ run_id: runId, part_no: i + 1, source: p.source, entry: p.entry })))
    .onConflict((oc) => oc.columns(['run_id', 'part_no']).doNothing())
    .returningAll()
    .execute();
}

export async function getParts(db: Db | Transaction<Database>, runId: number): Promise<ImportPart[]> {
  return db
    .selectFrom('import_run_parts')
    .selectAll()
    .where('run_id', '=', runId)
    .orderBy('part_no')
    .execute();
}

export async function getPart(db: Db | Transaction<Database>, id: number): Promise<ImportPart | undefined> {
  return db.selectFrom('import_run_parts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function setPartJobIds(db: Db, runId: number, jobIds: ReadonlyMap<number, string>) {
  for (const [partNo, jobId] of jobIds) {
    await db
      .updateTable('import_run_parts')
      .set({ job_id: jobId })
      .where('run_id', '=', runId)
      .where('part_no', '=', partNo)
      .execute();
  }
}

export async function markPartRunning(db: Db, id: number, bytesTotal: number | null): Promise<void> {
  await db
    .updateTable('import_run_parts')
    .set({
      status: 'running',
      started_at: sql<Date>`coalesce(started_at, now())`,
      bytes_total: bytesTotal,
      error: null,
    })
    .where('id', '=', id)
    .execute();
}

/** The run's total bytes: the sum of its parts' once every part knows its size. */
export async function refreshRunBytesTotal(db: Db, runId: number): Promise<void> {
  await sql`
    update import_runs r set bytes_total = (
      select case when count(*) = count(p.bytes_total) then sum(p.bytes_total) end
      from import_run_parts p where p.run_id = r.id)
    where r.id = ${runId}`.execute(db);
}

/** A part was read to its end. */
export async function succeedPart(db: Db, id: number, bytesRead: number): Promise<void> {
  await db
    .updateTable('import_run_parts')
    .set({ status: 'succeeded', bytes_read: bytesRead, finished_at: new Date(), error: null })
    .where('id', '=', id)
    .execute();
}

/**
 * A part failed for good (a no-op on a part that already succeeded). Its run fails when it settles
 * (a run is only as good as all its parts), after merging what the other parts loaded; its `--full`
 * step never runs.
 */
export async function failPart(db: Db, id: number, error: string): Promise<void> {
  await db
    .updateTable('import_run_parts')
    .set({ status: 'failed', error: error.slice(0, 2000), finished_at: new Date() })
    .where('id', '=', id)
    .where('status', 'in', ['queued', 'running'])
    .execute();
}

export async function notePartAttemptError(db: Db, id: number, error: string): Promise<void> {
  await db
    .updateTable('import_run_parts')
    .set({ error: `attempt failed, will retry: ${error}`.slice(0, 2000) })
    .where('id', '=', id)
    .execute();
}

/**
 * Forgets what a part had done (its staged rows were lost: a server crash empties unlogged tables):
 * its counts come off the run and it starts again from its first row.
 */
export async function restartPart(trx: Transaction<Database>, part: ImportPart): Promise<void> {
  await trx
    .updateTable('import_runs')
    .set((eb) => ({
      rows_read: eb('rows_read', '-', part.rows_read),
      rejected: eb('rejected', '-', part.rejected),
      warnings: eb('warnings', '-', part.warnings),
      checkpoint_rows: eb('checkpoint_rows', '-', part.rows_read),
    }))
    .where('id', '=', part.run_id)
    .execute();
  await trx
    .updateTable('import_run_parts')
    .set({
      rows_read: 0,
      accepted: 0,
      rejected: 0,
      warnings: 0,
      checkpoint_rows: 0,
      bytes_read: 0,
      // A part read again after it had finished (its staged rows went stale) is not done any more.
      status: 'running',
      finished_at: null,
    })
    .where('id', '=', part.id)
    .execute();
  await trx
    .deleteFrom('import_rejects')
    .where('run_id', '=', part.run_id)
    .where('part_no', '=', part.part_no)
    .execute();
}
