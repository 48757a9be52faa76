import type { Selectable } from 'kysely';
import type { Db } from '../../shared/db.js';
import type { Database, ReindexRunStatus } from '../../shared/tables.js';

/**
 * The only writer of schedule_reindex_runs: one row per firing of a reindex schedule (what import_runs
 * is to an import schedule). One Kysely chain per function.
 */
export type ReindexRun = Selectable<Database['schedule_reindex_runs']>;

/**
 * The run of one slot. The unique (schedule_name, scheduled_for) makes a slot seen twice (two
 * workers, a retried firing) one run: the second insert does nothing and the first run is returned.
 */
export async function insertReindexRun(
  db: Db,
  run: {
    scheduleName: string;
    slot: Date;
    job: ReindexRun['job'];
    status: 'queued' | 'skipped' | 'failed';
    reason?: string | null;
    result?: Record<string, unknown> | null;
  },
): Promise<{ id: number; status: ReindexRunStatus; created: boolean }> {
  const settled = run.status !== 'queued';
  const inserted = await db
    .insertInto('schedule_reindex_runs')
    .values({
      schedule_name: run.scheduleName,
      scheduled_for: run.slot,
      job: run.job,
      status: run.status,
      reason: run.reason ?? null,
      result: run.result ? JSON.stringify(run.result) : null,
      ...(settled ? { finished_at: new Date() } : {}),
    })
    .onConflict((oc) => oc.columns(['schedule_name', 'scheduled_for']).doNothing())
    .returning(['id', 'status'])
    .executeTakeFirst();
  if (inserted) return { ...inserted, created: true };
  const existing = await db
    .selectFrom('schedule_reindex_runs')
    .select(['id', 'status'])
    .where('schedule_name', '=', run.scheduleName)
    .where('scheduled_for', '=', run.slot)
    .executeTakeFirstOrThrow();
  return { ...existing, created: false };
}

export function getReindexRun(db: Db, id: number): Promise<ReindexRun | undefined> {
  return db.selectFrom('schedule_reindex_runs').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function setReindexRunJobId(db: Db, id: number, jobId: string): Promise<void> {
  await db.updateTable('schedule_reindex_runs').set({ job_id: jobId }).where('id', '=', id).execute();
}

/** Its job started (or started again after a retry); the first start time is kept. */
export async function markReindexRunRunning(db: Db, id: number): Promise<void> {
  await db
    .updateTable('schedule_reindex_runs')
    .set((eb) => ({ status: 'running', started_at: eb.fn.coalesce('started_at', eb.val(new Date())) }))
    .where('id', '=', id)
    .where('status', 'in', ['queued', 'running'])
    .execute();
}

/** The run ended. A no-op on a settled run: a late report must not undo what was recorded. */
export async function settleReindexRun(
  db: Db,
  id: number,
  end: { status: 'succeeded' | 'failed'; reason?: string | null; result?: Record<string, unknown> | null },
): Promise<void> {
  await db
    .updateTable('schedule_reindex_runs')
    .set({
      status: end.status,
      reason: end.reason?.slice(0, 2000) ?? null,
      result: end.result ? JSON.stringify(end.result) : null,
      finished_at: new Date(),
    })
    .where('id', '=', id)
    .where('status', 'in', ['queued', 'running'])
    .execute();
}
