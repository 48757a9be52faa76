import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../shared/db.js';

export interface ScheduledReindexDeps {
  db: Db;
  /** Runs `bizdir <args>` with the run's environment; resolves to its exit code. */
  bizdir(args: string[]): Promise<number>;
  /** The Meilisearch database folder's allocated bytes now. */
  indexBytes(): number;
}

export interface ScheduledReindexResult {
  /** Index bytes per Org just before the scheduled run (after the month's import and sync). */
  beforeBytesPerOrg: number;
  /** Index bytes per Org after the scheduled rebuild was swapped in. */
  afterBytesPerOrg: number;
  /** From the schedule's firing to its run settled. */
  runMs: number;
  status: string;
  reason: string | null;
}

/**
 * The operator's monthly chore as a schedule (issue 49 part 2, docs/operations.md): a reindex
 * schedule with a growth threshold, fired by the bench's own worker (every minute here), measured
 * on the index the month-later import left. The worker must have MEILI_DB_PATH to measure growth.
 */
export async function scheduledReindex(
  deps: ScheduledReindexDeps,
  orgs: number,
  whenGrown: number,
): Promise<ScheduledReindexResult> {
  const name = 'bench-monthly-reindex';
  const beforeBytesPerOrg = deps.indexBytes() / orgs;
  const code = await deps.bizdir([
    'schedule',
    'set',
    name,
    '--reindex',
    '--when-grown',
    String(whenGrown),
    '--cron',
    '* * * * *',
  ]);
  if (code !== 0) throw new Error(`bizdir schedule set exited ${code}`);
  const started = Date.now();
  let removed = false;
  const remove = async () => {
    if (removed) return;
    removed = true;
    await deps.bizdir(['schedule', 'remove', name]);
  };
  try {
    for (;;) {
      // The schedule's first firing is the one measured: the schedule goes as soon as it has fired,
      // so a later minute's firing (skipped while the rebuild runs) cannot be taken for it.
      const run = await deps.db
        .selectFrom('schedule_reindex_runs')
        .select(['status', 'reason'])
        .where('schedule_name', '=', name)
        .orderBy('id', 'asc')
        .executeTakeFirst();
      if (run) await remove();
      if (run && run.status !== 'queued' && run.status !== 'running')
        return {
          beforeBytesPerOrg,
          afterBytesPerOrg: deps.indexBytes() / orgs,
          runMs: Date.now() - started,
          status: run.status,
          reason: run.reason,
        };
      if (Date.now() - started > 4 * 3_600_000)
        throw new Error('the scheduled reindex did not settle in 4 h');
      await sleep(2_000);
    }
  } finally {
    await remove();
  }
}
