import type { FeedHandler } from '../feed-handler.js';
import { getRun, type ImportRun } from '../import-runs/import-runs.repository.js';
import { isSettled } from '../import-runs/import-runs.state.js';
import type { RunImportDeps } from './deps.js';
import { advisoryLock, advisoryUnlock, tryAdvisoryLock } from './run.repository.js';

/**
 * Runs `fn` holding the feed's lock (a session advisory lock on a connection of its own), with the
 * run as it is once the lock is held; a run settled meanwhile is returned as it is, `fn` not called.
 */
export async function withFeedLock<T>(
  deps: RunImportDeps,
  run: ImportRun,
  handler: FeedHandler,
  fn: (fresh: ImportRun) => Promise<T | ImportRun>,
): Promise<T | ImportRun> {
  const { db } = deps;
  const lockKey = `bizdir:import:${handler.lockKey(run.options)}`;
  // Held for the whole step: a second import of the same register waits here. If this process dies,
  // Postgres drops the connection and the lock with it.
  return db.connection().execute(async (conn) => {
    if (!(await tryAdvisoryLock(conn, lockKey))) {
      deps.logger?.info({ runId: run.id, lockKey }, 'waiting for another import of the same feed to finish');
      await advisoryLock(conn, lockKey);
    }
    try {
      // Re-read: another worker may have finished this run while we waited.
      const fresh = await getRun(db, run.id);
      if (!fresh || isSettled(fresh.status)) return fresh ?? run;
      return await fn(fresh);
    } finally {
      await advisoryUnlock(conn, lockKey);
    }
  });
}
