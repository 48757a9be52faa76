import type { Db } from '../../shared/db.js';
import type { Logger } from '../../shared/logger.js';
import type { FeedConfig } from '../feed-handler.js';
import type { ImportRun } from '../import-runs/import-runs.repository.js';
import { type RunCounts, runCounts } from '../import-runs/import-runs.state.js';

/**
 * Rows per batch when RunImportDeps.batchSize is not given: fewer statements per row than smaller
 * batches, while the worker's peak memory stays flat with the file's size (docs/benchmarks.md).
 */
export const IMPORT_BATCH_SIZE = 5000;

/** Chunks of a staged run merged side by side when RunImportDeps.mergeLanes is not given. */
export const MERGE_LANES = 2;

/**
 * The pooled connections one import job can hold at once (jobs/worker.ts sizes the worker's pool from
 * it): the feed's lock, held for the whole run (withFeedLock); per merge lane (or, for a feed loaded
 * directly, per batch in flight: the location feed's two) its transaction and a second connection it
 * waits for inside that transaction (public labels are reserved in short transactions of their own:
 * public-domains.ts reserveSlugs); and one for what runs between them (the next chunk's plan, the
 * statistics and progress of the chunk that committed). A pool with fewer can deadlock: the lanes
 * hold their transactions and wait for a connection that only they could give back (the pool's
 * connection timeout then fails the attempt; seen with the index sync running beside a re-import).
 */
export const IMPORT_JOB_CONNECTIONS = 1 + 2 * MERGE_LANES + 1;

/**
 * What a run needs from its caller (the queue processors; tests and tools call runImport directly).
 *
 * A run is safe under failure: each batch commits its records, rejects, counters and the checkpoint in one
 * transaction. A retried run re-reads the file, skips the records before the checkpoint and goes on,
 * so a killed worker plus a retry ends with the same records and counts as one clean run.
 */
export interface RunImportDeps {
  db: Db;
  /** From the process's configuration, read once at start-up (the worker's, or a tool's own). */
  config: FeedConfig;
  logger?: Logger;
  /** Called after each committed batch (and once at the end) with the run's counters. */
  onProgress?: (progress: ImportProgress) => void | Promise<void>;
  /** Called after each commit with the Orgs whose content changed in it (search indexing hooks in here). */
  onBatchCommitted?: (orgIds: number[]) => void | Promise<void>;
  /**
   * Chunks of a staged run merged side by side, each in its own transaction and connection (default
   * MERGE_LANES in this file; the pool needs this many connections besides the one holding the feed's lock).
   */
  mergeLanes?: number;
  /** Keys per merge chunk and transaction (default: the feed's own; MERGE_CHUNK in registrar.feed.ts). */
  mergeChunk?: number;
  /**
   * This many batches' transactions at once (default: the feed's own, PreparedFeed.batchesInFlight);
   * 1 loads one batch after the other. The pool needs this many connections besides the feed lock's.
   */
  batchesInFlight?: number;
  /** Records per batch and transaction (default IMPORT_BATCH_SIZE in this file). */
  batchSize?: number;
  /** Where a zip behind a URL is downloaded to (default: the OS temp folder). */
  tmpDir?: string;
  /**
   * Shutdown: once aborted, the run stops after the batch in flight has committed and
   * throws ImportInterruptedError; the run stays `running` at its checkpoint for the next worker.
   */
  signal?: AbortSignal;
}

export interface ImportProgress extends RunCounts {
  runId: number;
  status: ImportRun['status'];
  bytesRead: number;
  bytesTotal: number | null;
}

export const progressOf = (run: ImportRun): ImportProgress => ({
  runId: run.id,
  status: run.status,
  ...runCounts(run),
  bytesRead: run.bytes_read,
  bytesTotal: run.bytes_total,
});
