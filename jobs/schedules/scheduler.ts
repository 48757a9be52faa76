import type { Queue } from 'bullmq';
import type { Db } from '../../shared/db.js';
import type { QueueName } from '../../shared/queues.js';
import { fireImport, type ImportFiringDeps, type ImportFiringOutcome } from './import-firing.js';
import { fireReindex, type ReindexFiringDeps, type ReindexFiringOutcome } from './reindex-firing.js';
import { allSchedules, getSchedule } from './schedule.repository.js';

/**
 * Firings go to the import queue: a scheduled import waits its turn like any other import, and so
 * does a scheduled reindex before it queues its rebuild on the index queue.
 */
export const SCHEDULE_QUEUE: QueueName = 'import';

/** The job a schedule fires; it only decides and records, the import itself is an ordinary import-feed job. */
export const RUN_SCHEDULE_JOB = 'run-schedule';
export interface RunSchedulePayload {
  schedule: string;
}

/** Job scheduler ids are namespaced so reconciliation never touches schedulers it does not own. */
const SCHEDULER_PREFIX = 'schedule:';
export const schedulerIdOf = (name: string) => `${SCHEDULER_PREFIX}${name}`;

// Bounded history: the run rows in Postgres are the record, Redis keeps only a tail.
const JOB_OPTS = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 5_000 },
  removeOnComplete: { count: 100 },
  removeOnFail: { count: 500 },
} as const;

/** The structural part of a BullMQ queue that schedules need (any typed Queue fits). */
export type SchedulerQueue = Pick<Queue, 'getJobSchedulers' | 'upsertJobScheduler' | 'removeJobScheduler'>;

export interface ReconcileResult {
  upserted: string[];
  removed: string[];
  unchanged: string[];
}

/**
 * Makes BullMQ's job schedulers match the import_schedules table. Run when workers start (and
 * periodically), so a Redis flush or a schedule changed while no worker ran is repaired. Safe to
 * run from several workers at once: upserting the same scheduler twice leaves one scheduler, and
 * a slot that still fires twice yields one run (see createScheduledRun).
 */
export async function reconcileSchedules(db: Db, queue: SchedulerQueue): Promise<ReconcileResult> {
  const wanted = await allSchedules(db);
  const existing = await queue.getJobSchedulers(0, -1);
  const byId = new Map(existing.map((s) => [s.key, s]));
  const result: ReconcileResult = { upserted: [], removed: [], unchanged: [] };
  const wantedIds = new Set<string>();
  for (const schedule of wanted) {
    const id = schedulerIdOf(schedule.name);
    wantedIds.add(id);
    const current = byId.get(id);
    // Re-upserting an identical scheduler would move its next slot; leave matching ones alone.
    if (current && current.pattern === schedule.cron && (current.tz ?? 'UTC') === schedule.tz) {
      result.unchanged.push(schedule.name);
      continue;
    }
    await upsertScheduler(queue, schedule.name, schedule.cron, schedule.tz);
    result.upserted.push(schedule.name);
  }
  for (const s of existing) {
    if (s.key.startsWith(SCHEDULER_PREFIX) && !wantedIds.has(s.key)) {
      await queue.removeJobScheduler(s.key);
      result.removed.push(s.key.slice(SCHEDULER_PREFIX.length));
    }
  }
  return result;
}

export function upsertScheduler(queue: SchedulerQueue, name: string, cron: string, tz: string) {
  const data: RunSchedulePayload = { schedule: name };
  return queue.upsertJobScheduler(
    schedulerIdOf(name),
    { pattern: cron, tz },
    { name: RUN_SCHEDULE_JOB, data, opts: JOB_OPTS },
  );
}

export function removeScheduler(queue: SchedulerQueue, name: string) {
  return queue.removeJobScheduler(schedulerIdOf(name));
}

export type RunScheduleDeps = ImportFiringDeps & Partial<Omit<ReindexFiringDeps, keyof ImportFiringDeps>>;

export type RunScheduleOutcome = { outcome: 'gone' } | ImportFiringOutcome | ReindexFiringOutcome;

/**
 * One firing of a schedule: an import (import-firing.ts), or a rebuild or check of the search index
 * (reindex-firing.ts). `slot` is the firing time BullMQ computed (the same for every worker that
 * might see it).
 */
export async function runSchedule(
  deps: RunScheduleDeps,
  name: string,
  slot: Date,
): Promise<RunScheduleOutcome> {
  const schedule = await getSchedule(deps.db, name);
  // Removed after the firing was queued: nothing to do (reconciliation removes the scheduler).
  if (!schedule) return { outcome: 'gone' };
  if (schedule.job === 'import') return fireImport(deps, schedule, slot);
  const { enqueueRebuild, rebuildUnderWay, verify, indexGrowth } = deps;
  if (!enqueueRebuild || !rebuildUnderWay || !verify || !indexGrowth)
    throw new Error(`schedule ${name}: this worker cannot run ${schedule.job} schedules`);
  return fireReindex({ ...deps, enqueueRebuild, rebuildUnderWay, verify, indexGrowth }, schedule, slot);
}

/**
 * The slot a scheduler job stands for: BullMQ stores the firing time it computed in
 * `opts.prevMillis` (the same value for every worker). A job added by hand has none; its creation
 * time is its slot.
 */
export function slotOf(job: { opts: { prevMillis?: number }; timestamp: number }): Date {
  return new Date(job.opts.prevMillis ?? job.timestamp);
}

/** The BullMQ processor body for a run-schedule job. */
export function processRunSchedule(
  deps: RunScheduleDeps,
  job: {
    data: RunSchedulePayload;
    opts: { prevMillis?: number; attempts?: number };
    timestamp: number;
    attemptsMade?: number;
  },
): Promise<RunScheduleOutcome> {
  const finalAttempt = (job.attemptsMade ?? 0) + 1 >= (job.opts.attempts ?? 1);
  return runSchedule({ ...deps, finalAttempt }, job.data.schedule, slotOf(job));
}
