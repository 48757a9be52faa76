import path from 'node:path';
import { expect } from 'vitest';
import type { FeedConfig, RawImportOptions } from '../../ingest/feed-handler.js';
import { feedHandler } from '../../ingest/feeds.js';
import type { ImportRun } from '../../ingest/import-runs/import-runs.repository.js';
import { createImportRun } from '../../ingest/import-runs/import-runs.state.js';
import type { RunImportDeps } from '../../ingest/run/deps.js';
import { ImportFailedError } from '../../ingest/run/errors.js';
import { runImport } from '../../ingest/run/run-import.js';
import type { Db } from '../../shared/db.js';
import type { ImportFeed } from '../../shared/tables.js';

/** What a test run gets from configuration: the default DOMAIN_SUFFIX, as the test API uses (support/api.ts). */
export const FEED_CONFIG: FeedConfig = { domainSuffix: 'bizdir.test' };

export interface ImportFeedOptions extends RawImportOptions {
  batchSize?: number;
  /** At most this many batches in flight (RunImportDeps.batchesInFlight). */
  batchesInFlight?: number;
  /** DOMAIN_SUFFIX of the run (default FEED_CONFIG's). */
  domainSuffix?: string;
  onBatchCommitted?: RunImportDeps['onBatchCommitted'];
}

/**
 * Loads a feed file (or URL) the way the worker does, without a queue: creates the import run and
 * runs it to the end. Throws ImportFailedError when the run fails (the run row says why).
 *
 *   const run = await importFeed(t.db, 'registrar', 'test/fixtures/registrar-small.csv');
 */
export async function importFeed(
  db: Db,
  feed: ImportFeed,
  source: string,
  options: ImportFeedOptions = {},
): Promise<ImportRun> {
  const handler = feedHandler(feed);
  if (!handler) throw new Error(`feed ${feed} is not registered in ingest/feeds.ts`);
  const { batchSize, batchesInFlight, onBatchCommitted, domainSuffix, ...raw } = options;
  const location = /^https?:\/\//i.test(source) ? source : path.resolve(source);
  const run = await createImportRun(db, {
    feed,
    parts: [{ source: location, entry: null }],
    options: handler.parseOptions(raw),
  });
  return runImport(
    {
      db,
      config: domainSuffix ? { domainSuffix } : FEED_CONFIG,
      ...(batchSize ? { batchSize } : {}),
      ...(batchesInFlight ? { batchesInFlight } : {}),
      ...(onBatchCommitted ? { onBatchCommitted } : {}),
    },
    run.id,
  );
}

/** The message of an import that failed for good (an ImportFailedError that is not retryable); anything else fails the test. */
export async function permanentFailure(run: Promise<unknown>): Promise<string> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ImportFailedError);
  expect((error as ImportFailedError).retryable).toBe(false);
  return (error as Error).message;
}

/** A run's rejected rows and warnings (import_rejects), in line order. */
export function rejectsOf(db: Db, runId: number) {
  return db
    .selectFrom('import_rejects')
    .select(['severity', 'line_number', 'column_name', 'reason', 'raw'])
    .where('run_id', '=', runId)
    .orderBy('line_number')
    .execute();
}
