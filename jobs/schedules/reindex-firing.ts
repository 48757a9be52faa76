import type { DriftReport } from '../../search/verify.js';
import { driftCount } from '../../search/verify.js';
import type { Db } from '../../shared/db.js';
import type { Logger } from '../../shared/logger.js';
import { type IndexGrowth, times } from './index-growth.js';
import { insertReindexRun, markReindexRunRunning, settleReindexRun } from './reindex-runs.repository.js';
import type { ScheduleRow } from './schedule.repository.js';

export interface ReindexFiringDeps {
  db: Db;
  /** Queues the same rebuild as `bizdir reindex` for the run; returns its job id. Idempotent per run id. */
  enqueueRebuild(runId: number): Promise<string>;
  /** What already rebuilds the index (a queued or running rebuild job, a registered build), if anything. */
  rebuildUnderWay(): Promise<string | null>;
  /** `bizdir reindex --verify`'s comparison of the live index with Postgres. */
  verify(): Promise<DriftReport>;
  /** The index's size now against right after its last build (`--when-grown`). */
  indexGrowth(): Promise<IndexGrowth>;
  finalAttempt?: boolean;
  log?: Logger;
}

export type ReindexFiringOutcome =
  | { outcome: 'queued'; runId: number; jobId: string }
  | { outcome: 'skipped'; runId: number; reason: string }
  | { outcome: 'succeeded'; runId: number; reason: string }
  | { outcome: 'failed'; runId: number; error: string }
  | { outcome: 'duplicate'; runId: number };

/**
 * One firing of a reindex schedule. `reindex` queues the rebuild `bizdir reindex` queues (a fresh
 * index built beside the live one and swapped in: no downtime), unless a rebuild is already under
 * way (the later one would supersede it) or, with a growth threshold, the index has not grown that
 * far since its last build. `reindex-verify` compares the live index with Postgres here and now, as
 * `bizdir reindex --verify` does: drift fails the run (it only reads; `bizdir reindex` repairs).
 */
export async function fireReindex(
  deps: ReindexFiringDeps,
  schedule: ScheduleRow,
  slot: Date,
): Promise<ReindexFiringOutcome> {
  const log = deps.log?.child({ schedule: schedule.name });
  if (schedule.job === 'reindex-verify')
    return verify(deps, { scheduleName: schedule.name, slot, job: 'reindex-verify' }, log);
  const base = { scheduleName: schedule.name, slot, job: 'reindex' } as const;

  const settled = async (status: 'skipped' | 'failed', reason: string): Promise<ReindexFiringOutcome> => {
    const run = await insertReindexRun(deps.db, { ...base, status, reason });
    if (!run.created) return { outcome: 'duplicate', runId: run.id };
    log?.[status === 'failed' ? 'warn' : 'info']({ runId: run.id, reason }, `scheduled reindex ${status}`);
    return status === 'failed'
      ? { outcome: 'failed', runId: run.id, error: reason }
      : { outcome: 'skipped', runId: run.id, reason };
  };
  const underWay = await deps.rebuildUnderWay();
  if (underWay !== null) return settled('skipped', `a rebuild is already under way (${underWay})`);

  let reason = 'scheduled';
  if (schedule.when_grown !== null) {
    const growth = await deps.indexGrowth();
    if (growth.kind === 'unmeasurable')
      return settled('failed', `--when-grown: cannot measure the index: ${growth.reason}`);
    if (growth.growth === null) reason = 'no size recorded after a build yet: rebuilding to have one';
    else {
      const at = `${times(growth.growth)} its size per Org after the last build`;
      if (growth.growth < schedule.when_grown)
        return settled('skipped', `the index is at ${at}; rebuilt from ${times(schedule.when_grown)}`);
      reason = `the index is at ${at} (rebuilt from ${times(schedule.when_grown)})`;
    }
  }
  const run = await insertReindexRun(deps.db, { ...base, status: 'queued', reason });
  // A retried firing re-enqueues only while its run still waits; the job id keeps that to one job.
  if (!run.created && run.status !== 'queued') return { outcome: 'duplicate', runId: run.id };
  const jobId = await deps.enqueueRebuild(run.id);
  log?.info({ runId: run.id, jobId, reason }, 'scheduled reindex queued');
  return run.created ? { outcome: 'queued', runId: run.id, jobId } : { outcome: 'duplicate', runId: run.id };
}

async function verify(
  deps: ReindexFiringDeps,
  base: { scheduleName: string; slot: Date; job: 'reindex-verify' },
  log: Logger | undefined,
): Promise<ReindexFiringOutcome> {
  const run = await insertReindexRun(deps.db, { ...base, status: 'queued' });
  if (!run.created && run.status !== 'queued' && run.status !== 'running')
    return { outcome: 'duplicate', runId: run.id };
  await markReindexRunRunning(deps.db, run.id);
  let report: DriftReport;
  try {
    report = await deps.verify();
  } catch (error) {
    // Meilisearch or Postgres away: the firing is tried again, and fails the run on its last attempt.
    if (!deps.finalAttempt) throw error;
    const reason = `could not compare the index with Postgres: ${(error as Error).message}`;
    await settleReindexRun(deps.db, run.id, { status: 'failed', reason });
    return { outcome: 'failed', runId: run.id, error: reason };
  }
  const drift = driftCount(report);
  const result = {
    orgs: report.orgs,
    documents: report.documents,
    missing: report.missing.count,
    extra: report.extra.count,
    stale: report.stale.count,
  };
  if (drift === 0) {
    const reason = `no drift: ${report.orgs} Orgs, ${report.documents} documents`;
    await settleReindexRun(deps.db, run.id, { status: 'succeeded', reason, result });
    log?.info({ runId: run.id, ...result }, 'scheduled index check: no drift');
    return { outcome: 'succeeded', runId: run.id, reason };
  }
  const reason =
    `search index drift: ${result.missing} missing, ${result.extra} extra, ${result.stale} stale ` +
    `(bizdir reindex --verify lists them; bizdir reindex rebuilds the index)`;
  await settleReindexRun(deps.db, run.id, { status: 'failed', reason, result });
  log?.warn({ runId: run.id, ...result }, 'scheduled index check found drift');
  return { outcome: 'failed', runId: run.id, error: reason };
}
