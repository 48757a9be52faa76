import { reportConnectionError } from '../shared/outage.js';
import { endpointsBehind, pruneOldAttempts } from '../webhooks/sweep.js';
import {
  DELIVER_JOB,
  DELIVER_JOB_OPTIONS,
  deliverJobId,
  webhookRuntime,
} from './deliver-webhooks.processor.js';
import { createQueue } from './queue.js';
import type { WorkerDeps } from './registry.js';

export interface WebhookSweep {
  /** Resolves after the first sweep (or its failure, which is logged). */
  readonly ready: Promise<void>;
  stop(): Promise<void>;
}

/** How often a worker looks for endpoints behind the feed: the longest a new event waits for its job. */
export const WEBHOOK_SWEEP_MS = 1_000;
const PRUNE_EVERY_MS = 3_600_000;

/**
 * Enqueues a delivery job for every endpoint behind the feed, when the workers start and then every
 * second. Postgres holds each endpoint's cursor, so a Redis that lost its data, or a worker killed in
 * the middle of a request, loses nothing: the endpoint is behind, and is enqueued again (its job id
 * makes the many workers' sweeps add it once). Once an hour it also forgets old delivery attempts.
 */
export function startWebhookSweep(deps: WorkerDeps, intervalMs = WEBHOOK_SWEEP_MS): WebhookSweep {
  const queue = createQueue('webhooks', { connection: deps.connection, prefix: deps.config.queuePrefix });
  const log = deps.logger.child({ component: 'webhooks-sweep' });
  let lastPrune = 0;
  let running: Promise<void> = Promise.resolve();
  let busy = false;
  const once = async () => {
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
  const sweep = () => {
    // A slow sweep (Postgres busy) is not stacked on: the next tick after it ends sweeps again.
    if (busy) return running;
    busy = true;
    running = once()
      .catch((err: unknown) => {
        // Postgres or Redis away: that outage is logged once (with its end) by its tracker.
        const outage = reportConnectionError(err, { postgres: deps.db, redis: deps.connection });
        log[outage ? 'debug' : 'warn']({ err }, 'webhook sweep failed; the next one tries again');
      })
      .finally(() => {
        busy = false;
      });
    return running;
  };
  const ready = sweep();
  const timer = setInterval(sweep, intervalMs);
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
