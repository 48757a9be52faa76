import { reportConnectionError } from '../../shared/outage.js';
import { createQueue } from '../queue.js';
import type { WorkerDeps } from '../registry.js';
import { reconcileSchedules } from './scheduler.js';

export interface ScheduleReconciler {
  /** Resolves after the first reconciliation (or its failure, which is logged). */
  readonly ready: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Reconciles schedules when the workers start and then every `intervalMs`: a Redis flush, or a
 * schedule changed while Redis was away, is repaired within one interval without a restart.
 * Every worker runs one; they converge on the same schedulers (see reconcileSchedules).
 */
export function startScheduleReconciler(deps: WorkerDeps, intervalMs = 60_000): ScheduleReconciler {
  const queue = createQueue('import', { connection: deps.connection, prefix: deps.config.queuePrefix });
  const log = deps.logger.child({ component: 'schedules' });
  let running: Promise<void> = Promise.resolve();
  const once = () => {
    running = reconcileSchedules(deps.db, queue).then(
      (r) => {
        if (r.upserted.length + r.removed.length > 0) log.info(r, 'schedules reconciled');
      },
      (err: unknown) => {
        // Postgres or Redis away: that outage is logged once (with its end) by its tracker.
        const outage = reportConnectionError(err, { postgres: deps.db, redis: deps.connection });
        log[outage ? 'debug' : 'warn']({ err }, 'could not reconcile schedules; will retry');
      },
    );
    return running;
  };
  const ready = once();
  const timer = setInterval(() => void running.then(once), intervalMs);
  timer.unref();
  return {
    ready,
    async stop() {
      clearInterval(timer);
      await running;
      await queue.close();
    },
  };
}
