import type { Command } from 'commander';
import { openProducerQueue, producerCall } from '../../jobs/queue.js';
import { createMeiliClient, INDEXING_TIMEOUT_MS, isUnavailable } from '../../search/meili-client.js';
import { syncOutbox } from '../../search/org-sync.js';
import { RebuildStopped } from '../../search/rebuild-stop.js';
import { reindex } from '../../search/reindex.js';
import { keepReplicaSet } from '../../search/replica-set.repository.js';
import { meiliReplicasOf } from '../../search/replicas.js';
import { driftCount, type ReplicaDrift, verifyReplicas } from '../../search/verify.js';
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
      // Every replica MEILI_URL names (one, usually), each with its own progress (search/replicas.ts).
      const replicas = meiliReplicasOf({
        ...config,
        meiliUrl: meiliUrlOf(config),
        meiliMasterKey: meiliMasterKeyOf(config),
      }).map((replica) => {
        const meili = createMeiliClient(replica.conn, INDEXING_TIMEOUT_MS);
        const deps = {
          db,
          meili,
          indexUid: config.meiliIndex,
          ...(replica.name !== undefined ? { replica: replica.name } : {}),
        };
        return { label: replica.label, meili, deps };
      });
      const several = replicas.length > 1;
      try {
        if (flags.verify) {
          const reports = await verifyReplicas(db, replicas, config.meiliIndex);
          const drift = reports.reduce((n, r) => n + driftCount(r.report), 0);
          if (flags.json) {
            const one = (r: ReplicaDrift) => ({ ...r.report, drift: driftCount(r.report) });
            console.log(
              JSON.stringify(
                several
                  ? { drift, replicas: reports.map((r) => ({ replica: r.replica, ...one(r) })) }
                  : one(reports[0]!),
              ),
            );
          } else for (const r of reports) printDrift(r, several);
          if (drift > 0)
            throw new CliError(
              `search index drift: ${
                several
                  ? reports
                      .filter((r) => driftCount(r.report) > 0)
                      .map((r) => `${r.replica} ${driftCount(r.report)}`)
                      .join(', ')
                  : drift
              } Org(s) missing, extra or stale`,
            );
          return;
        }
        // The replicas' progress rows follow MEILI_URL (as the indexing worker keeps them).
        await keepReplicaSet(
          db,
          replicas.flatMap((r) => (r.deps.replica === undefined ? [] : [r.deps.replica])),
        );
        let shown = -1;
        // Interrupted (Ctrl-C, SIGTERM): the build is dropped and the live index left as it was
        // (ReindexOptions.signal); a second signal kills the process at once.
        const interrupted = new AbortController();
        const stop = () => interrupted.abort();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        // Each replica in turn, so the others keep serving while one is rebuilt; every live index
        // keeps syncing meanwhile (a replica away is left to catch up later).
        const syncAll = async () => {
          for (const r of replicas) {
            try {
              await syncOutbox(r.deps);
            } catch (error) {
              if (!several || !isUnavailable(error)) throw error;
            }
          }
        };
        const results = [];
        try {
          for (const r of replicas) {
            if (several && !flags.json) console.log(`replica ${r.label}:`);
            shown = -1;
            const result = await reindex(
              { ...r.deps, log: (line) => !flags.json && console.log(line) },
              {
                sync: syncAll,
                onProgress: (done, total) => {
                  const pct = Math.floor((done / Math.max(total, 1)) * 100);
                  if (!flags.json && pct >= shown + 10) {
                    shown = pct;
                    console.log(`  ${done}/${total} Orgs (${pct}%)`);
                  }
                },
                signal: interrupted.signal,
              },
            ).catch((error: unknown) => {
              if (error instanceof RebuildStopped) throw new CliError(error.message);
              throw error;
            });
            results.push({ replica: r.label, ...result });
            if (!flags.json)
              console.log(
                `search index rebuilt${several ? ` on ${r.label}` : ''}: ${result.documents} Orgs, ${result.replayed} replayed, ${(result.ms / 1000).toFixed(1)} s`,
              );
          }
        } finally {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
        }
        if (flags.json) {
          const { replica: _label, ...only } = results[0]!;
          console.log(JSON.stringify(several ? { replicas: results } : only));
        }
      } finally {
        await close();
      }
    });
}

/** One replica's drift, as `--verify` prints it (headed by the replica when there are several). */
function printDrift({ replica, report }: ReplicaDrift, several: boolean): void {
  const indent = several ? '  ' : '';
  if (several) console.log(`replica ${replica}: drift ${driftCount(report)}`);
  console.log(`${indent}Orgs in Postgres: ${report.orgs}; documents in index: ${report.documents}`);
  for (const kind of ['missing', 'extra', 'stale'] as const) {
    const { count, ids } = report[kind];
    console.log(
      `${indent}${kind}: ${count}${count > 0 ? ` (org ids ${ids.slice(0, 20).join(', ')}${count > 20 ? ', ...' : ''})` : ''}`,
    );
  }
}
