/**
 * The typed job registry: one list of queue and job names and one union of payloads.
 * Payloads carry ids only; Postgres holds the truth (the import_runs row, the Org rows).
 * A worker refuses to start when a job name of its queue has no processor (jobs/registry.ts).
 */
export const QUEUES = {
  // run-schedule: one firing of a recurring import (jobs/schedules); it creates an ordinary run.
  // import-part: one source of a run of several (a child of the run's import-feed job).
  import: ['import-feed', 'import-part', 'run-schedule'],
  index: ['index-orgs'],
  // prune-events: the change feed's retention, every hour (jobs/events).
  events: ['prune-events'],
  // deliver-webhooks: one endpoint's events, in order (job id per endpoint: one in the queue at a time).
  webhooks: ['deliver-webhooks'],
} as const;

export type QueueName = keyof typeof QUEUES;
export type JobName<Q extends QueueName = QueueName> = (typeof QUEUES)[Q][number];

export interface JobPayloads {
  /**
   * Runs one import_runs row (registrar or locations feed) to its end; for a run of several sources,
   * the parent of its import-part jobs, run once they are done (it merges and settles the run).
   */
  'import-feed': { runId: number };
  /** Reads one source (import_run_parts row) of a run; any number run at once, on any worker. */
  'import-part': { runId: number; partId: number };
  /** One firing of the named schedule (import_schedules); the slot is the job's opts.prevMillis. */
  'run-schedule': { schedule: string };
  /**
   * Brings the search index up to date with Orgs changed in Postgres (the changes themselves are in
   * search_outbox); with `rebuild`, builds a fresh index and swaps it in (`bizdir reindex`).
   * `change`: a commit touched the records (jobs/index-on-change.ts). `scheduleRun`: the
   * schedule_reindex_runs row of the scheduled reindex that queued the rebuild.
   */
  'index-orgs': {
    reason: 'import' | 'sweep' | 'change' | 'reindex' | 'schedule';
    rebuild?: boolean;
    scheduleRun?: number;
  };
  /** Deletes the change feed's events older than EVENTS_RETENTION_DAYS; Postgres says which. */
  'prune-events': Record<string, never>;
  /**
   * Sends an endpoint's undelivered events (webhooks/deliver.ts); webhook_deliveries says where it
   * stands. Enqueued by the sweep (jobs/webhooks-sweep.ts) for every endpoint behind the feed.
   */
  'deliver-webhooks': { endpointId: number };
}

export type JobData<N extends JobName> = JobPayloads[N];

export const QUEUE_NAMES = Object.keys(QUEUES) as QueueName[];
