import path from 'node:path';
import type { Command } from 'commander';
import { ImportOptionsError } from '../../ingest/feed-handler.js';
import { feedHandler, feedNames } from '../../ingest/feeds.js';
import { createRun, markFailed, setRunJobId } from '../../ingest/import-runs.repository.js';
import { assertLocalSourceReadable, isUrl, SourceError } from '../../ingest/source.js';
import { enqueueImportRun, openProducerQueue } from '../../jobs/queue.js';
import { createDb } from '../../shared/db.js';
import { CliError, cliConfig, databaseUrlOf, redisUrlOf } from '../cli-context.js';
import { countsLine, followRun } from './import-follow.js';

interface ImportCliOptions {
  country?: string;
  org?: string;
  full?: boolean;
  wait?: boolean;
}

/**
 * `bizdir import <feed> <file|url>`: records an import run and enqueues its job; a worker does the
 * work. Generic over the feeds registered in ingest/feeds.ts.
 */
export function registerImport(program: Command): void {
  program
    .command('import')
    .description('import a feed file or URL (.csv, .gz, or .zip holding one CSV) through the queue')
    .argument('<feed>', `the feed: ${feedNames().join(' | ')}`)
    .argument('<source>', 'file path or http(s) URL')
    .option(
      '--country <code>',
      'the register the company numbers belong to (ISO code; registrar default GB)',
      undefined,
    )
    .option('--org <domain|company-number>', 'locations: the Org the sheet belongs to')
    .option('--full', 'the file is the complete list: records missing from it are marked as gone')
    .option('--wait', 'follow the import with a progress bar; exit non-zero if it fails')
    .action(async (feed: string, source: string, opts: ImportCliOptions) => {
      const handler = feedHandler(feed);
      if (!handler) throw new CliError(`unknown feed "${feed}" (known: ${feedNames().join(', ')})`);
      let options: ReturnType<typeof handler.parseOptions>;
      try {
        options = handler.parseOptions({ country: opts.country, org: opts.org, full: opts.full });
      } catch (error) {
        if (error instanceof ImportOptionsError) throw new CliError(error.message);
        throw error;
      }
      const location = isUrl(source) ? source : path.resolve(source);
      if (!isUrl(source)) {
        // Refused here, before anything is recorded or enqueued.
        try {
          await assertLocalSourceReadable(location);
        } catch (error) {
          if (error instanceof SourceError) throw new CliError(error.message);
          throw error;
        }
      }
      const config = cliConfig();
      const { db, close } = createDb(databaseUrlOf(config), { max: 2, applicationName: 'bizdir-import' });
      const producer = openProducerQueue(config, redisUrlOf(config), 'import');
      try {
        const run = await createRun(db, { feed: handler.feed, source: location, options });
        let jobId: string;
        try {
          jobId = await enqueueImportRun(producer.queue, run.id);
        } catch (error) {
          const reason = `could not enqueue the import job: ${(error as Error).message}`;
          await markFailed(db, run.id, reason);
          throw new CliError(`${reason} (is Redis running?)`);
        }
        await setRunJobId(db, run.id, jobId);
        console.log(`import run ${run.id} queued: ${handler.feed} ${location}`);
        if (!opts.wait) return;
        const final = await followRun(db, producer.queue, run.id, jobId);
        if (final.status !== 'succeeded') {
          throw new CliError(`import run ${run.id} ${final.status}: ${final.error ?? 'no reason recorded'}`);
        }
        console.log(`import run ${run.id} succeeded: ${countsLine(final)}`);
        if (final.rejected + final.warnings > 0)
          console.log(`see the rejected rows: bizdir imports show ${run.id}`);
      } finally {
        await producer.close();
        await close();
      }
    });
}
