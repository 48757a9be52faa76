import { importWriting, planCatchUp } from '../search/catch-up.js';
import { ensureOrgIndex, IndexOutdatedError } from '../search/index-definition.js';
import { createMeiliClient, INDEXING_TIMEOUT_MS, indexExists } from '../search/meili-client.js';
import { countOrgs } from '../search/org-rows.read-model.js';
import { type SyncResult, syncOutbox } from '../search/org-sync.js';
import { rebuildForBacklog, reindex } from '../search/reindex.js';
import type { MeiliReplica } from '../search/replicas.js';
import type { Config } from '../shared/config.js';
import type { Db } from '../shared/db.js';
import type { Logger } from '../shared/logger.js';
import { outageTracker } from '../shared/outage.js';

/**
 * The indexing work of one Meilisearch replica (search/replicas.ts): bringing its live index up to
 * date with the changes it has pending (a sync, or a rebuild when far behind), and rebuilding it on
 * `bizdir reindex`. Each replica has its own client, lock, progress and outage log, so a replica that
 * is down or rebuilding holds up none of the others (jobs/index-orgs.processor.ts runs them side by
 * side).
 */
export interface ReplicaIndexerDeps {
  db: Db;
  config: Pick<Config, 'meiliIndex' | 'searchRebuildBacklog' | 'searchRebuildDuringImport'>;
  logger: Logger;
  replica: MeiliReplica;
  /** Several replicas are configured: their names go in the log lines. */
  several: boolean;
}

export interface CatchUpRunOptions {
  reason: string;
  signal?: AbortSignal | undefined;
  onProgress?: (done: number, total: number) => void;
  /** Called after a rebuild swapped a new index in (the index's size is recorded). */
  onBuilt?: () => Promise<void>;
}

export type ReplicaIndexer = ReturnType<typeof replicaIndexer>;

export function replicaIndexer(deps: ReplicaIndexerDeps) {
  const { db, config, replica } = deps;
  const log = deps.several ? deps.logger.child({ replica: replica.label }) : deps.logger;
  const meili = createMeiliClient(replica.conn, INDEXING_TIMEOUT_MS);
  const indexUid = config.meiliIndex;
  const base = { db, meili, indexUid, ...(replica.name !== undefined ? { replica: replica.name } : {}) };
  // Meilisearch away: one line when the sweep first meets it, one when a sweep gets through again.
  const outage = outageTracker(log, deps.several ? `Meilisearch ${replica.label}` : 'Meilisearch');
  let settingsApplied = false;
  let fillChecked = false;
  let waitingLogged = false;
  // An index of an older format gets no writes (the changes wait in the outbox) until `bizdir reindex`
  // replaces it: said once, and again if it comes back after a run got through.
  let olderLogged = false;
  const logOlder = () => {
    if (olderLogged) return;
    olderLogged = true;
    log.warn({ index: indexUid }, new IndexOutdatedError(indexUid).message);
  };

  const prepare = async () => {
    if (settingsApplied) return;
    if ((await ensureOrgIndex(meili, indexUid)) === 'older') logOlder();
    settingsApplied = true;
  };

  /**
   * A replica whose index is empty while Postgres holds Orgs (added to MEILI_URL, or its data lost)
   * has nothing pending that would fill it: it is rebuilt from Postgres, once per worker start.
   */
  const needsFill = async (): Promise<boolean> => {
    if (fillChecked || replica.name === undefined) return false;
    const documents = (await indexExists(meili, indexUid))
      ? (await meili.index(indexUid).getStats()).numberOfDocuments
      : 0;
    fillChecked = true;
    return documents === 0 && (await countOrgs(db, Number.MAX_SAFE_INTEGER)) > 0;
  };

  /** Brings the live index up to date: a sync, or a rebuild when the backlog is large. */
  const catchUp = async (options: CatchUpRunOptions): Promise<SyncResult & { waiting?: number }> => {
    await prepare();
    const plan = await planCatchUp(db, meili, indexUid, config.searchRebuildBacklog, replica.name);
    if (plan.action === 'wait' && !config.searchRebuildDuringImport) {
      if (!waitingLogged) {
        log.info(
          { pending: plan.pending, documents: plan.documents, importsRunning: plan.importsRunning },
          'search index far behind: waiting for the running import, then rebuilding it',
        );
        waitingLogged = true;
      }
      return { ran: false, indexed: 0, removed: 0, batches: 0, waiting: plan.pending };
    }
    waitingLogged = false;
    const empty = plan.action === 'sync' && (await needsFill());
    if (plan.action !== 'sync' || empty) {
      if (empty)
        log.info({ index: indexUid }, 'search index empty on this replica: building it from Postgres');
      // `wait` with SEARCH_REBUILD_DURING_IMPORT: the new index follows the import until it ends.
      const follow = plan.action === 'wait' ? { follow: () => importWriting(db) } : {};
      const rebuilt = await rebuildForBacklog(
        { ...base, log: (line) => log.info(line) },
        {
          ...(options.onProgress ? { onProgress: options.onProgress } : {}),
          ...follow,
          ...(options.signal ? { signal: options.signal } : {}),
        },
      );
      if (rebuilt.ran) {
        log.info({ reason: options.reason, ...rebuilt }, 'search index rebuilt to catch up');
        await options.onBuilt?.();
      }
    }
    // The backlog can grow past the threshold while this run drains it: look again as it goes.
    const result = await syncOutbox(base, {
      keepGoing: async () =>
        !options.signal?.aborted &&
        (await planCatchUp(db, meili, indexUid, config.searchRebuildBacklog, replica.name)).action === 'sync',
    });
    if (result.olderIndex) logOlder();
    else if (result.ran) olderLogged = false;
    if (result.batches > 0) log.info({ reason: options.reason, ...result }, 'search index updated');
    return result;
  };

  return {
    replica,
    meili,
    outage,
    catchUp,
    /** Posts what is pending to the live index (between a rebuild's chunks). */
    sync: () => syncOutbox(base),
    /** `bizdir reindex` on this replica: a fresh index built beside the live one and swapped in. */
    rebuild: async (options: {
      sync: () => Promise<unknown>;
      onProgress?: (done: number, total: number) => void;
      signal?: AbortSignal | undefined;
    }) => {
      await prepare();
      return reindex(
        { ...base, log: (line) => log.info(line) },
        {
          sync: options.sync,
          ...(options.onProgress ? { onProgress: options.onProgress } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        },
      );
    },
  };
}
