import { DelayedError } from 'bullmq';
import type { JobName } from '../shared/queues.js';
import { type DeliveryDeps, deliverEndpoint } from '../webhooks/deliver.js';
import type { EventFeed } from '../webhooks/event-feed.js';
import { createEventFeed } from '../webhooks/feed.read-model.js';
import { createReceiverClient, type ReceiverClient } from '../webhooks/receiver-client.js';
import type { ProcessorFactory, WorkerDeps } from './registry.js';

export const DELIVER_JOB: JobName<'webhooks'> = 'deliver-webhooks';

/** One job per endpoint: adding it again while it waits, runs or is delayed changes nothing. */
export const deliverJobId = (endpointId: number) => `webhook-endpoint-${endpointId}`;

/**
 * Finished jobs are removed, so the endpoint's job id is free for the next enqueue. A job that throws
 * (Postgres away) is tried a few times, then dropped: the sweep enqueues the endpoint again while it
 * is behind, since Postgres, not the queue, holds what is left to send.
 */
export const DELIVER_JOB_OPTIONS = {
  removeOnComplete: true,
  removeOnFail: true,
  attempts: 3,
  backoff: { type: 'exponential', delay: 2_000 },
} as const;

interface WebhookRuntime {
  feed: EventFeed;
  client: ReceiverClient;
}

const runtimes = new WeakMap<WorkerDeps, WebhookRuntime>();

/** The feed and the HTTP client of a worker process's webhook jobs (one connection pool to receivers). */
export function webhookRuntime(deps: WorkerDeps): WebhookRuntime {
  let runtime = runtimes.get(deps);
  if (!runtime) {
    runtime = {
      feed: createEventFeed(deps.db, deps.config.domainSuffix),
      client: createReceiverClient({ allowPrivate: deps.config.webhooksAllowPrivate }),
    };
    runtimes.set(deps, runtime);
  }
  return runtime;
}

/** Closes the worker's connections to receivers (on shutdown). */
export async function closeWebhookRuntime(deps: WorkerDeps): Promise<void> {
  const runtime = runtimes.get(deps);
  runtimes.delete(deps);
  await runtime?.client.close();
}

/**
 * `deliver-webhooks`: a thin step over webhooks/deliver.ts. What is left to send waits in the job's
 * own delayed state: a failed request until its retry, a busy endpoint until its lease lapses, a long
 * backlog behind the other endpoints' jobs (each run sends for a slice of time, then yields).
 */
export const deliverWebhooksProcessor: ProcessorFactory<'deliver-webhooks'> = (deps) => {
  const log = deps.logger.child({ component: 'webhooks' });
  return async (job, token, signal) => {
    const { feed, client } = webhookRuntime(deps);
    const delivery: DeliveryDeps = { db: deps.db, feed, client, log };
    const outcome = await deliverEndpoint(delivery, job.data.endpointId, signal ? { signal } : {});
    const now = Date.now();
    let at: number | null = null;
    if (outcome.kind === 'retry') at = outcome.at.getTime();
    else if (outcome.kind === 'busy') at = (outcome.until?.getTime() ?? now) + 1_000;
    else if (outcome.kind === 'yield') at = now;
    if (at === null || token === undefined) return outcome;
    // Keeps the endpoint's job id: no second job can be queued for it meanwhile.
    await job.moveToDelayed(Math.max(at, now), token);
    throw new DelayedError();
  };
};
