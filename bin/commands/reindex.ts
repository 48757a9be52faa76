import type { Command } from 'commander';
import { openProducerQueue, producerCall } from '../../jobs/queue.js';
import { createMeiliClient, INDEXING_TIMEOUT_MS } from '../../search/meili-client.js';
import { syncOutbox } from '../../search/org-sync.js';
import { RebuildStopped } from '../../search/rebuild-stop.js';
import { reindex } from '../../search/reindex.js';
import { driftCount, verifyIndex } from '../../search/verify.js';
import { createDb } from '../../shared/db.js';
import {
  CliError,
  cliConfig,
  databaseUrlOf,
  meiliMasterKeyOf,
  meiliUrlOf,
  redisUrlOf,
} from '../cli-context.js';

interface ReindexFlags {
  wait?: boolean;
  verify?: boolean;
  json?: boolean;
}

/**
 * `bizdir reindex`: queue a rebuild of the Org search index for a worker; `--wait` runs it here and
 * returns when the new index is live; `--verify` compares the index with Postgres instead and exits
 * 1 when anything is missing, extra or stale.
 */
export function registerReindex(program: Command): void {
  program
    .command('reindex')
    .description('rebuild the Org search index from Postgres and swap it in without downtime')
    .option('--wait', 'run the rebuild in this process and wait until the new index is live')
    .option('--verify', 'report drift between Postgres and the index (exit 1 when there is any)')
    .option('--json', 'print the result as one JSON object')
    .action(async (flags: ReindexFlags) => {
      const config = cliConfig();
      if (flags.wait && flags.verify)
        throw new CliError('--wait and --verify do different things: give one (--verify only reads)');
      if (!flags.wait && !flags.verify) {
        const { queue, close } = await openProducerQueue(config, redisUrlOf(config), 'index');
        try {
          const job = await producerCall(
            'queueing the rebuild',
            queue.add('index-orgs', { reason: 'reindex', rebuild: true }),
          );
          console.log(
            flags.json ? JSON.stringify({ job_id: job.id }) : `queued search rebuild (job ${job.id})`,
          );
        } finally {
          await close();
        }
        return;
      }
      const { db, close } = createDb(databaseUrlOf(config), { max: 4, applicationName: 'bizdir-reindex' });
      const meili = createMeiliClient(
        { url: meiliUrlOf(config), apiKey: meiliMasterKeyOf(config) },
        INDEXING_TIMEOUT_MS,
      );
      const deps = { db, meili, indexUid: config.meiliIndex };
      try {
        if (flags.verify) {
          const report = await verifyIndex(db, meili, config.meiliIndex);
          const drift = driftCount(report);
          if (flags.json) console.log(JSON.stringify({ ...report, drift }));
          else {
            console.log(`Orgs in Postgres: ${report.orgs}; documents in index: ${report.documents}`);
            for (const kind of ['missing', 'extra', 'stale'] as const) {
              const { count, ids } = report[kind];
              console.log(
                `${kind}: ${count}${count > 0 ? ` (org ids ${ids.slice(0, 20).join(', ')}${count > 20 ? ', ...' : ''})` : ''}`,
              );
            }
          }
          if (drift > 0) throw new CliError(`search index drift: ${drift} Org(s) missing, extra or stale`);
          return;
        }
        let shown = -1;
        // Interrupted (Ctrl-C, SIGTERM): the build is dropped and the live index left as it was
        // (ReindexOptions.signal); a second signal kills the process at once.
        const interrupted = new AbortController();
        const stop = () => interrupted.abort();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        const result = await reindex(
          { ...deps, log: (line) => !flags.json && console.log(line) },
          {
            sync: () => syncOutbox(deps),
            onProgress: (done, total) => {
              const pct = Math.floor((done / Math.max(total, 1)) * 100);
              if (!flags.json && pct >= shown + 10) {
                shown = pct;
                console.log(`  ${done}/${total} Orgs (${pct}%)`);
              }
            },
            signal: interrupted.signal,
          },
        )
          .catch((error: unknown) => {
            if (error instanceof RebuildStopped) throw new CliError(error.message);
            throw error;
          })
          .finally(() => {
            process.off('SIGINT', stop);
            process.off('SIGTERM', stop);
          });
        console.log(
          flags.json
            ? JSON.stringify(result)
            : `search index rebuilt: ${result.documents} Orgs, ${result.replayed} replayed, ${(result.ms / 1000).toFixed(1)} s`,
        );
      } finally {
        await close();
      }
    });
}
