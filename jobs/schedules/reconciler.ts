import { reportConnectionError } from '../../shared/outage.js';
import { type PeriodicTask, runPeriodically } from '../periodic.js';
import { createQueue } from '../queue.js';
import type { WorkerDeps } from '../registry.js';
import { reconcileSchedules } from './scheduler.js';

/**
 * Reconciles schedules when the workers start and then every `intervalMs`: a Redis flush, or a
 * schedule changed while Redis was away, is repaired within one interval without a restart.
 * Every worker runs one; they converge on the same schedulers (see reconcileSchedules).
 */
export function startScheduleReconciler(deps: WorkerDeps, intervalMs = 60_000): PeriodicTask {
  const queue = createQueue('import', { connection: deps.connection, prefix: deps.config.queuePrefix });
  const log = deps.logger.child({ component: 'schedules' });
  return runPeriodically({
    intervalMs,
    run: async () => {
      const r = await reconcileSchedules(deps.db, queue);
      if (r.upserted.length + r.removed.length > 0) log.info(r, 'schedules reconciled');
    },
    onError: (err) => {
      // Postgres or Redis away: that outage is logged once (with its end) by its tracker.
      const outage = reportConnectionError(err, { postgres: deps.db, redis: deps.connection });
      log[outage ? 'debug' : 'warn']({ err }, 'could not reconcile schedules; will retry');
    },
    close: () => queue.close(),
  });
}
