/**
 * The typed job registry: one list of queue and job names and one union of payloads.
 * Payloads carry ids only; Postgres holds the truth (the import_runs row, the Org rows).
 * A worker refuses to start when a job name of its queue has no processor (jobs/registry.ts).
 */
export const QUEUES = {
  // run-schedule: one firing of a recurring import (jobs/schedules); it creates an ordinary run.
  import: ['import-feed', 'run-schedule'],
  index: ['index-orgs'],
} as const;

export type QueueName = keyof typeof QUEUES;
export type JobName<Q extends QueueName = QueueName> = (typeof QUEUES)[Q][number];

export interface JobPayloads {
  /** Runs one import_runs row (registrar or locations feed). */
  'import-feed': { runId: number };
  /** One firing of the named schedule (import_schedules); the slot is the job's opts.prevMillis. */
  'run-schedule': { schedule: string };
  /**
   * Brings the search index up to date with Orgs changed in Postgres (the changes themselves are in
   * search_outbox); with `rebuild`, builds a fresh index and swaps it in (`bizdir reindex`).
   */
  'index-orgs': { reason: 'import' | 'sweep' | 'reindex'; rebuild?: boolean };
}

export type JobData<N extends JobName> = JobPayloads[N];

export const QUEUE_NAMES = Object.keys(QUEUES) as QueueName[];
