import { type Selectable, sql } from 'kysely';
import type { Db } from '../../shared/db.js';
import type { Database, ImportFeed, ImportOptionsJson } from '../../shared/tables.js';

/** The only writer of import_schedules. */
export type ScheduleRow = Selectable<Database['import_schedules']>;

export interface ImportScheduleInput {
  name: string;
  job?: 'import';
  feed: ImportFeed;
  /** Templates of the date, as written (source-template.ts). */
  sources: readonly string[];
  cron: string;
  tz: string;
  options: ImportOptionsJson;
}

export interface ReindexScheduleInput {
  name: string;
  job: 'reindex' | 'reindex-verify';
  cron: string;
  tz: string;
  /** `reindex` only: rebuild once the index has grown past this multiple of a fresh build. */
  whenGrown?: number | null;
}

export type ScheduleInput = ImportScheduleInput | ReindexScheduleInput;

const isReindex = (s: ScheduleInput): s is ReindexScheduleInput =>
  s.job === 'reindex' || s.job === 'reindex-verify';

export interface ScheduleWithLastRun extends ScheduleRow {
  /** `import`: an import_runs id; `reindex`: a schedule_reindex_runs id. */
  last_run_id: number | null;
  last_run_status: string | null;
  last_run_at: Date | null;
  last_run_error: string | null;
}

/** Creates the schedule or replaces its definition (same name). */
export function upsertSchedule(db: Db, s: ScheduleInput) {
  const values = isReindex(s)
    ? {
        name: s.name,
        job: s.job,
        feed: null,
        sources: [],
        cron: s.cron,
        tz: s.tz,
        options: '{}',
        when_grown: s.job === 'reindex' ? (s.whenGrown ?? null) : null,
      }
    : {
        name: s.name,
        job: 'import' as const,
        feed: s.feed,
        sources: [...s.sources],
        cron: s.cron,
        tz: s.tz,
        options: JSON.stringify(s.options),
        when_grown: null,
      };
  const { name: _name, ...changes } = values;
  return db
    .insertInto('import_schedules')
    .values(values)
    .onConflict((oc) => oc.column('name').doUpdateSet({ ...changes, updated_at: sql<Date>`now()` }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function getSchedule(db: Db, name: string) {
  return db.selectFrom('import_schedules').selectAll().where('name', '=', name).executeTakeFirst();
}

export function allSchedules(db: Db) {
  return db.selectFrom('import_schedules').selectAll().orderBy('name').execute();
}

/**
 * Every schedule (or the one named) with its most recent run, any status, for `schedule list|show`:
 * an import's from import_runs, a reindex's from schedule_reindex_runs.
 */
export function listSchedulesWithLastRun(db: Db, name?: string): Promise<ScheduleWithLastRun[]> {
  let query = db
    .selectFrom('import_schedules as s')
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('import_runs as r')
          .select(['r.id', 'r.status', 'r.created_at', 'r.finished_at', 'r.error'])
          .whereRef('r.schedule_name', '=', 's.name')
          .orderBy('r.id', 'desc')
          .limit(1)
          .as('imp'),
      (join) => join.onTrue(),
    )
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('schedule_reindex_runs as x')
          .select(['x.id', 'x.status', 'x.created_at', 'x.finished_at', 'x.reason'])
          .whereRef('x.schedule_name', '=', 's.name')
          .orderBy('x.id', 'desc')
          .limit(1)
          .as('idx'),
      (join) => join.onTrue(),
    )
    .selectAll('s')
    .select([
      sql<number | null>`case when s.job = 'import' then imp.id else idx.id end`.as('last_run_id'),
      sql<string | null>`case when s.job = 'import' then imp.status else idx.status end`.as(
        'last_run_status',
      ),
      sql<Date | null>`case when s.job = 'import' then coalesce(imp.finished_at, imp.created_at)
                            else coalesce(idx.finished_at, idx.created_at) end`.as('last_run_at'),
      sql<string | null>`case when s.job = 'import' then imp.error else idx.reason end`.as('last_run_error'),
    ])
    .orderBy('s.name');
  if (name !== undefined) query = query.where('s.name', '=', name);
  return query.execute();
}

export async function removeSchedule(db: Db, name: string): Promise<boolean> {
  const result = await db.deleteFrom('import_schedules').where('name', '=', name).executeTakeFirst();
  return result.numDeletedRows > 0n;
}
