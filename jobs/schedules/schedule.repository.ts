import { type Selectable, sql } from 'kysely';
import type { Db } from '../../shared/db.js';
import type { Database, ImportFeed, ImportOptionsJson, ImportStatus } from '../../shared/tables.js';

export type ScheduleRow = Selectable<Database['import_schedules']>;

export interface ScheduleInput {
  name: string;
  feed: ImportFeed;
  source: string;
  cron: string;
  tz: string;
  options: ImportOptionsJson;
}

export interface ScheduleWithLastRun extends ScheduleRow {
  last_run_id: number | null;
  last_run_status: ImportStatus | null;
  last_run_at: Date | null;
  last_run_error: string | null;
}

/** Creates the schedule or replaces its definition (same name). */
export function upsertSchedule(db: Db, s: ScheduleInput) {
  const values = { ...s, options: JSON.stringify(s.options) };
  return db
    .insertInto('import_schedules')
    .values(values)
    .onConflict((oc) =>
      oc.column('name').doUpdateSet({
        feed: s.feed,
        source: s.source,
        cron: s.cron,
        tz: s.tz,
        options: values.options,
        updated_at: sql<Date>`now()`,
      }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function getSchedule(db: Db, name: string) {
  return db.selectFrom('import_schedules').selectAll().where('name', '=', name).executeTakeFirst();
}

export function allSchedules(db: Db) {
  return db.selectFrom('import_schedules').selectAll().orderBy('name').execute();
}

/** Every schedule with its most recent run (any status), for `schedule list`. */
export function listSchedulesWithLastRun(db: Db): Promise<ScheduleWithLastRun[]> {
  return db
    .selectFrom('import_schedules as s')
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('import_runs as r')
          .select(['r.id', 'r.status', 'r.created_at', 'r.finished_at', 'r.error'])
          .whereRef('r.schedule_name', '=', 's.name')
          .orderBy('r.id', 'desc')
          .limit(1)
          .as('last'),
      (join) => join.onTrue(),
    )
    .selectAll('s')
    .select([
      'last.id as last_run_id',
      'last.status as last_run_status',
      sql<Date | null>`coalesce(last.finished_at, last.created_at)`.as('last_run_at'),
      'last.error as last_run_error',
    ])
    .orderBy('s.name')
    .execute();
}

export async function removeSchedule(db: Db, name: string): Promise<boolean> {
  const result = await db.deleteFrom('import_schedules').where('name', '=', name).executeTakeFirst();
  return result.numDeletedRows > 0n;
}
