import path from 'node:path';
import type { Command } from 'commander';
import { type FeedHandler, ImportOptionsError } from '../../ingest/feed-handler.js';
import { feedHandler, feedNames } from '../../ingest/feeds.js';
import { setPartJobIds } from '../../ingest/import-runs/import-parts.repository.js';
import { failRun, setRunJobId } from '../../ingest/import-runs/import-runs.repository.js';
import {
  createImportRun,
  type PartSource,
  partLocation,
  partsOf,
} from '../../ingest/import-runs/import-runs.state.js';
import { checkPartHeader } from '../../ingest/run/header-check.js';
import { assertLocalSourceReadable, csvEntriesOf, isUrl, SourceError } from '../../ingest/source.js';
import { enqueueImportParts, enqueueImportRun, openProducerQueue, producerCall } from '../../jobs/queue.js';
import { createDb } from '../../shared/db.js';
import { FeedFormatError } from '../../shared/errors.js';
import type { ImportOptionsJson } from '../../shared/tables.js';
import { CliError, cliConfig, databaseUrlOf, redisUrlOf } from '../cli-context.js';
import { countsLine, followRun } from './import-follow.js';

interface ImportCliOptions {
  country?: string;
  org?: string;
  full?: boolean;
  maxGone?: string;
  wait?: boolean;
}

/**
 * The header of each local part, read as the worker will read it (checkPartHeader): a file that is
 * not the feed's format fails the command before anything is recorded or enqueued, instead of a run
 * that is queued and fails in the worker. Sources behind a URL are left to the worker (checking them
 * here would mean downloading them twice).
 */
async function checkHeaders(
  handler: FeedHandler,
  parts: readonly PartSource[],
  options: ImportOptionsJson,
  domainSuffix: string,
): Promise<void> {
  for (const part of parts.filter((p) => !isUrl(p.source))) {
    try {
      await checkPartHeader(handler, part, options, { domainSuffix });
    } catch (error) {
      if (error instanceof FeedFormatError || error instanceof SourceError)
        throw new CliError(`${partLocation(part)}: ${error.message}`);
      throw error;
    }
  }
}

/**
 * The parts of a run: each source given, a zip holding several CSVs (local, or a `.zip` URL) as one
 * part per CSV. Local files are checked here, before anything is recorded or enqueued.
 */
async function partsFrom(sources: readonly string[]): Promise<PartSource[]> {
  const parts: PartSource[] = [];
  for (const source of sources) {
    const location = isUrl(source) ? source : path.resolve(source);
    if (isUrl(location) && !URL.canParse(location)) throw new CliError(`"${source}" is not a valid URL`);
    try {
      if (!isUrl(location)) await assertLocalSourceReadable(location);
      const entries = await csvEntriesOf(location);
      if (entries.length === 0) parts.push({ source: location, entry: null });
      else for (const entry of entries) parts.push({ source: location, entry });
    } catch (error) {
      if (error instanceof SourceError) throw new CliError(error.message);
      throw error;
    }
  }
  return parts;
}

/**
 * `bizdir import <feed> <source...>`: records one import run (one part per source) and enqueues it;
 * workers do the work, the parts in parallel. Generic over the feeds registered in ingest/feeds.ts.
 */
export function registerImport(program: Command): void {
  program
    .command('import')
    .description(
      'import a feed through the queue: one run of one or more sources (.csv, .gz, .zip of one or more CSVs)',
    )
    .argument('<feed>', `the feed: ${feedNames().join(' | ')}`)
    .argument('<source...>', 'file paths or http(s) URLs (the register: one file, or all its parts)')
    .option(
      '--country <code>',
      'the register the company numbers belong to (ISO code; registrar default GB)',
      undefined,
    )
    .option('--org <domain|company-number>', 'locations: the Org the sheet belongs to')
    .option(
      '--full',
      'the sources are the complete list: records missing from all of them are marked as gone',
    )
    .option(
      '--max-gone <percent>',
      'with --full: the most a run may mark as gone, in percent of what it could mark (default 10%; more fails the run)',
    )
    .option('--wait', 'follow the import with a progress bar; exit non-zero if it fails')
    .action(async (feed: string, sources: string[], opts: ImportCliOptions) => {
      const handler = feedHandler(feed);
      if (!handler) throw new CliError(`unknown feed "${feed}" (known: ${feedNames().join(', ')})`);
      let options: ReturnType<typeof handler.parseOptions>;
      try {
        options = handler.parseOptions({
          country: opts.country,
          org: opts.org,
          full: opts.full,
          maxGone: opts.maxGone,
        });
      } catch (error) {
        if (error instanceof ImportOptionsError) throw new CliError(error.message);
        throw error;
      }
      const parts = await partsFrom(sources);
      if (parts.length > 1 && !handler.staged)
        throw new CliError(`the ${feed} feed takes one source per run (${parts.length} given)`);
      const config = cliConfig();
      await checkHeaders(handler, parts, options, config.domainSuffix);
      const { db, close } = createDb(databaseUrlOf(config), { max: 2, applicationName: 'bizdir-import' });
      // Redis first: when it is away the command fails here, before a run is recorded.
      const producer = await openProducerQueue(config, redisUrlOf(config), 'import').catch(
        async (error: unknown) => {
          await close();
          throw error;
        },
      );
      try {
        const run = await createImportRun(db, { feed: handler.feed, parts, options });
        let jobId: string;
        try {
          if (parts.length === 1)
            jobId = await producerCall('queueing the import', enqueueImportRun(producer.queue, run.id));
          else {
            const rows = await partsOf(db, run);
            const queued = await producerCall(
              'queueing the import',
              enqueueImportParts(producer.flows, run.id, rows),
            );
            jobId = queued.jobId;
            await setPartJobIds(db, run.id, queued.partJobIds);
          }
        } catch (error) {
          const reason = `could not enqueue the import job: ${(error as Error).message}`;
          await failRun(db, run.id, reason);
          throw new CliError(`${reason} (is Redis running?)`);
        }
        await setRunJobId(db, run.id, jobId);
        const what = parts.length === 1 ? run.source : `${parts.length} parts`;
        console.log(`import run ${run.id} queued: ${handler.feed} ${what}`);
        if (!opts.wait) return;
        const final = await followRun(db, producer.queue, run.id, jobId);
        if (final.status !== 'succeeded') {
          throw new CliError(`import run ${run.id} ${final.status}: ${final.error ?? 'no reason recorded'}`);
        }
        console.log(`import run ${run.id} succeeded: ${countsLine(final)}`);
        if (final.counts.rejected + final.counts.warnings > 0)
          console.log(`see the rejected rows: bizdir imports show ${run.id}`);
      } finally {
        await producer.close();
        await close();
      }
    });
}
