import type { Transaction } from 'kysely';
import type { Config } from '../shared/config.js';
import type { Db } from '../shared/db.js';
import { BizdirError } from '../shared/errors.js';
import type { Database, ImportFeed, ImportOptionsJson } from '../shared/tables.js';
import type { CsvRecord } from './csv.js';
import type { NewIssue } from './import-runs/import-issues.repository.js';
import type { LookupColumns } from './table-stats.js';

/**
 * What a feed plugs into the generic import machinery (ingest/run/). The machinery reads the
 * source, cuts CSV records, checks column counts, stores rejects and warnings, keeps counters and the
 * checkpoint, holds the run lock and calls the handler for everything feed-specific:
 *
 *   parseOptions   CLI/job options -> the run's options (throws ImportOptionsError for a bad one)
 *   lockKey        runs with the same key never overlap (an advisory lock held for the whole run)
 *   prepare        the trimmed header -> a PreparedFeed; throws FeedFormatError when the file is not
 *                  this feed's format (the run then fails before any record is touched). It gets
 *                  the settings it needs from the process's configuration (FeedConfig), passed down
 *                  by whoever runs the import, never read here.
 *   normalize      pure: one record's fields -> a record or a reject, plus warnings
 *                  (it may run for the next batch while loadBatch of this one is in flight)
 *   loadBatch      writes one batch inside the caller's transaction (which also moves the checkpoint);
 *                  must be set-based (no query per row) and must not write unchanged records
 *   finish         once, after the last batch, inside the transaction that marks the run succeeded
 *                  (e.g. `--full`: mark what the file did not contain)
 *   staged         (optional) the feed reads any number of sources (parts), in parallel: loadBatch
 *                  only stages rows; once every part is read, `staged.planChunk` and `mergeChunk`
 *                  write the records, one chunk of keys per transaction, and `staged.finish` settles
 *                  the run.
 *
 * Resume contract: a retried run skips the records before its checkpoint, so loadBatch sees every
 * record exactly once across attempts; it gets the run id to tell its own earlier writes apart.
 */
/**
 * What a feed takes from the configuration, which the process reads once at start-up (shared/config.ts)
 * and passes down: DOMAIN_SUFFIX, against which `Org domain` cells and `--org` are read.
 */
export type FeedConfig = Pick<Config, 'domainSuffix'> & Partial<Pick<Config, 'importPipeline'>>;

export interface FeedHandler<R = unknown> {
  readonly feed: ImportFeed;
  parseOptions(raw: RawImportOptions): ImportOptionsJson;
  lockKey(options: ImportOptionsJson): string;
  /** The tables and columns its per-batch lookups filter on: kept analysed during a run (table-stats.ts). */
  readonly lookupColumns: LookupColumns;
  /** `headerRaw`: the header line as written (for row fingerprints). */
  prepare(
    header: readonly string[],
    options: ImportOptionsJson,
    headerRaw: string,
    config: FeedConfig,
  ): PreparedFeed<R>;
  readonly staged?: StagedFeed;
  /** Records reach the feed unsplit, and `recognize` decides which to split and normalize. */
  readonly recognizesRows?: boolean;
}

/** A feed whose parts stage their rows and whose run merges them once every part is read. */
export interface StagedFeed {
  /** Makes the run's staging area (idempotent; parts call it when they start). */
  open(db: Db, runId: number): Promise<void>;
  /** Rows a part has in the staging area. */
  stagedRows(db: Db, runId: number, partNo: number): Promise<number>;
  /** Rows each part has in the staging area, by part number (one pass, for all the parts at once). */
  stagedRowsByPart(db: Db, runId: number): Promise<Map<number, number>>;
  dropPart(trx: Transaction<Database>, runId: number, partNo: number): Promise<void>;
  /**
   * At every start of the merge, before the first chunk is planned (e.g. index the staging area, hand
   * out what must not depend on the chunks' order); idempotent.
   */
  prepareMerge(db: Db, ctx: BatchContext): Promise<void>;
  /**
   * Where the chunks after `after` end: the last key of every `limit` keys (or the feed's own chunk
   * size), in order; the keys after the last bound are one more chunk. One cheap pass over the
   * staged keys, so the chunks can be planned side by side.
   */
  chunkBounds(db: Db, ctx: BatchContext, after: string, limit?: number): Promise<string[]>;
  /**
   * The chunk of keys in (`after`, `upto`] (`upto` null: to the end; null result: no key there),
   * worked out outside any transaction (read-only but for reservations that need no rollback, e.g.
   * public labels), so chunks are planned while others are written.
   */
  planChunk(db: Db, ctx: BatchContext, after: string, upto: string | null): Promise<ChunkPlan | null>;
  /**
   * Writes a planned chunk in the caller's transaction. Chunks of one run are disjoint in their keys
   * and may be written side by side (run/merge.ts commits them in key order).
   */
  mergeChunk(db: Db, trx: Transaction<Database>, ctx: BatchContext, plan: ChunkPlan): Promise<MergeOutcome>;
  /** A planned chunk's transaction has ended (committed or rolled back), or it was never written. */
  chunkSettled?(ctx: BatchContext, plan: ChunkPlan): void;
  /** The run's last transaction: `complete` is false when a part failed (no `--full` marking then). */
  finish(trx: Transaction<Database>, ctx: BatchContext, complete: boolean): Promise<FinishOutcome>;
  /** Drops the staging area of a run that settled without finish (failed). */
  discard(db: Db, runId: number): Promise<void>;
}

/** A chunk of a staged run's keys, as planned by StagedFeed.planChunk (feeds add what they need). */
export interface ChunkPlan {
  /** The last key of the chunk (the merge position once it commits). */
  last: string;
}

export interface MergeOutcome {
  inserted: number;
  updated: number;
  unchanged: number;
  /** Keys merged in this chunk. */
  merged: number;
  /** The last key merged. */
  last: string;
  changedOrgIds: number[];
  /** inserted / updated / unchanged by the part whose row won. */
  byPart: Map<number, { inserted: number; updated: number; unchanged: number }>;
}

/** Options as given on the command line or by a schedule. */
export interface RawImportOptions {
  country?: string | undefined;
  org?: string | undefined;
  full?: boolean | undefined;
  /** `--max-gone`, as typed: `10` or `10%`. */
  maxGone?: string | undefined;
}

export interface PreparedFeed<R> {
  normalize(fields: readonly string[], line: number, raw: string): NormalizedRow<R>;
  /**
   * Rows known to be unchanged from their raw text alone (a fingerprint stored with the record they
   * were last written from): by index in `records`, the record to load in their place. They are
   * neither split, checked nor normalized.
   */
  recognize?(db: Db, records: readonly CsvRecord[], ctx: BatchContext): Promise<Map<number, R>>;
  /**
   * Splits, checks and normalizes a batch of records (those not recognised) in one call, e.g. on
   * another thread: the same rows and issues as `normalize` row by row would give (run/prepare-batch.ts
   * normalizeBatch). Without it, the machinery calls `normalize` for each record.
   */
  normalizeBatch?(
    records: readonly CsvRecord[],
    ctx: BatchContext,
  ): Promise<{ rows: BatchRow<R>[]; issues: NewIssue[] }>;
  /**
   * The key of the record a rejected row names, read from the row's raw text, or null when it cannot
   * be read. Stored with the reject (import_rejects.record_key): the row is in the file, so a `--full`
   * run must not take its record for missing. Called on the main thread for rejected rows only.
   */
  keyOfRejected?(raw: string): string | null;
  /** Batches read and prepared ahead of the one being written (default 1). */
  readonly readAhead?: number;
  loadBatch(
    trx: Transaction<Database>,
    rows: readonly BatchRow<R>[],
    ctx: LoadContext,
  ): Promise<BatchOutcome>;
  /**
   * Batches whose transactions may be open at once (default 1), each on its own connection so that
   * Postgres works on two of them on two cores; they commit in sheet order, each with its checkpoint,
   * so the checkpoint still means "every row up to here is written". loadBatch is called in sheet
   * order (a batch's call is made after the previous batch's call has begun). loadBatch must make a batch
   * wait (ctx.previousCommitted) before it reads or locks anything the batch before it may write.
   */
  batchesInFlight?: number;
  /** Direct-load feeds only (staged feeds finish in StagedFeed.finish). */
  finish?(trx: Transaction<Database>, ctx: FinishContext): Promise<FinishOutcome>;
}

export interface RowIssue {
  column: string | null;
  reason: string;
}

export type NormalizedRow<R> =
  | { ok: true; record: R; warnings: RowIssue[] }
  | { ok: false; reject: RowIssue; warnings: RowIssue[] };

export interface BatchRow<R> {
  line: number;
  raw: string;
  record: R;
}

export interface BatchContext {
  runId: number;
  /** The part (source) of the run the batch comes from, 1-based. */
  partNo: number;
  options: ImportOptionsJson;
}

/**
 * A batch of a feed that loads two batches at once (PreparedFeed.batchesInFlight): its transaction
 * may start before the batch before it has committed (on another connection), and commits after it.
 */
export interface LoadContext extends BatchContext {
  /**
   * Settles when the batch before this one has committed (rejects when it failed: this one then
   * fails too and rolls back). Settled for the first batch, and for every batch of a feed loading
   * one at a time. A statement run after it settles sees that batch's writes (read committed).
   */
  previousCommitted: Promise<void>;
}

export interface FinishContext extends BatchContext {
  /** Rows that normalized to a record over the whole run (all attempts). */
  acceptedRows: number;
}

export interface BatchOutcome {
  inserted: number;
  updated: number;
  unchanged: number;
  /** Rows whose key an earlier row of the same file already had (the later row wins). */
  duplicates: number;
  /** Orgs whose committed content changed (for search indexing). */
  changedOrgIds: number[];
  /** Rows the loader itself refused or warned about (e.g. an unknown Org), stored like the others. */
  issues?: NewIssue[];
}

export interface FinishOutcome {
  /** Records closed or marked as gone by a `--full` run. */
  closed: number;
  changedOrgIds: number[];
}

/** A bad option value; the CLI prints it and enqueues nothing. */
export class ImportOptionsError extends Error {
  override name = 'ImportOptionsError';
}

/**
 * Staged rows that can no longer be merged: they were recognised unchanged while their part was read,
 * and their records changed since (another run of the feed merged in between). The run reads those
 * parts again (under the feed's lock, so it cannot happen twice) and goes on merging.
 */
export class StaleStagedRowsError extends BizdirError {
  override name = 'StaleStagedRowsError';
  constructor(readonly partNos: readonly number[]) {
    super(`rows of part ${partNos.join(', ')} changed in the database while the part was read`, true);
  }
}

/**
 * A chunk lost a race with another writer that no lock orders (e.g. a public label the register run
 * reserved outside the slug lock, taken by another feed's new Org before the chunk wrote it,
 * registrar.orgs.ts). Nothing of the chunk committed; merging again from the last committed chunk,
 * with fresh reservations, resolves it.
 */
export class MergeRaceError extends BizdirError {
  override name = 'MergeRaceError';
  constructor(message: string) {
    super(message, true);
  }
}
