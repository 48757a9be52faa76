import { reportConnectionError } from '../shared/outage.js';
import { endpointsBehind, pruneOldAttempts } from '../webhooks/sweep.js';
import {
  DELIVER_JOB,
  DELIVER_JOB_OPTIONS,
  deliverJobId,
  webhookRuntime,
} from './deliver-webhooks.processor.js';
import { type PeriodicTask, runPeriodically } from './periodic.js';
import { createQueue } from './queue.js';
import type { WorkerDeps } from './registry.js';

/** How often a worker looks for endpoints behind the feed: the longest a new event waits for its job. */
export const WEBHOOK_SWEEP_MS = 1_000;
const PRUNE_EVERY_MS = 3_600_000;

/**
 * Enqueues a delivery job for every endpoint behind the feed, when the workers start and then every
 * second. Postgres holds each endpoint's cursor, so a Redis that lost its data, or a worker killed in
 * the middle of a request, loses nothing: the endpoint is behind, and is enqueued again (its job id
 * makes the many workers' sweeps add it once). Once an hour it also forgets old delivery attempts.
 */
export function startWebhookSweep(deps: WorkerDeps, intervalMs = WEBHOOK_SWEEP_MS): PeriodicTask {
  const queue = createQueue('webhooks', { connection: deps.connection, prefix: deps.config.queuePrefix });
  const log = deps.logger.child({ component: 'webhooks-sweep' });
  let lastPrune = 0;
  const sweep = async () => {
    const { feed } = webhookRuntime(deps);
    const now = new Date();
    const ids = await endpointsBehind(deps.db, feed, now);
    if (ids.length > 0) {
      await queue.addBulk(
        ids.map((endpointId) => ({
          name: DELIVER_JOB,
          data: { endpointId },
          opts: { ...DELIVER_JOB_OPTIONS, jobId: deliverJobId(endpointId) },
        })),
      );
    }
    if (now.getTime() - lastPrune >= PRUNE_EVERY_MS) {
      const pruned = await pruneOldAttempts(deps.db, now);
      lastPrune = now.getTime();
      if (pruned > 0) log.info({ pruned }, 'old webhook delivery attempts removed');
    }
  };
  // A slow sweep (Postgres busy) is not stacked on: the next tick after it ends sweeps again.
  return runPeriodically({
    intervalMs,
    run: sweep,
    onError: (err) => {
      // Postgres or Redis away: that outage is logged once (with its end) by its tracker.
      const outage = reportConnectionError(err, { postgres: deps.db, redis: deps.connection });
      log[outage ? 'debug' : 'warn']({ err }, 'webhook sweep failed; the next one tries again');
    },
    close: () => queue.close(),
  });
}
