import { sql } from 'kysely';
import type { Meilisearch } from 'meilisearch';
import type { Db } from '../shared/db.js';
import { indexExists } from './meili-client.js';

/**
 * When the live index is far behind Postgres (a first import of the register, a monthly re-import
 * that changed much of it), building a fresh index and swapping it in (reindex.ts
 * `rebuildForBacklog`) beats syncing the backlog batch by batch: at 5.7M Orgs the sync drained
 * about 130K Orgs a minute into an index that ended at 3,134 B/Org on disk, where one build takes
 * minutes and leaves the file at its used size (docs/search.md).
 *
 * The backlog is rebuilt when it holds at least `minOrgs` Org changes and at least REBUILD_SHARE of
 * the documents the live index holds (a rebuild costs the whole register, a sync the backlog).
 * While an import is still running, a backlog that size is left waiting: syncing it would compete
 * with the import for the same cores, and a rebuild started mid-import would leave the rest of the
 * import to be synced after it. Searches meanwhile see the index as it was (as they would while a
 * sync of that size caught up). A run that stopped writing for STALLED_MS is not waited for.
 */
export const REBUILD_SHARE = 0.3;
export const STALLED_MS = 10 * 60 * 1000;

export type CatchUpAction = 'sync' | 'wait' | 'rebuild';

export interface CatchUpPlan {
  action: CatchUpAction;
  /** Org changes in the outbox (ids, duplicates included). */
  pending: number;
  /** Documents in the live index (0 when it does not exist). */
  documents: number;
  /** Import runs in status `running`. */
  importsRunning: number;
}

/**
 * Decides how the indexer deals with the outbox now. `minOrgs` 0 turns rebuilding off (always sync).
 */
export async function planCatchUp(
  db: Db,
  meili: Meilisearch,
  indexUid: string,
  minOrgs: number,
): Promise<CatchUpPlan> {
  const { rows } = await sql<{ pending: number; newest_age_ms: number | null; running: number }>`
    select (select coalesce(sum(id_count), 0)::int from search_outbox) as pending,
           (select (extract(epoch from now() - max(created_at)) * 1000)::float8 from search_outbox) as newest_age_ms,
           (select count(*)::int from import_runs where status = 'running') as running`.execute(db);
  const row = rows[0]!;
  const plan = (action: CatchUpAction, documents = 0): CatchUpPlan => ({
    action,
    pending: row.pending,
    documents,
    importsRunning: row.running,
  });
  if (minOrgs <= 0 || row.pending < minOrgs) return plan('sync');
  const documents = (await indexExists(meili, indexUid))
    ? (await meili.index(indexUid).getStats()).numberOfDocuments
    : 0;
  if (row.pending < REBUILD_SHARE * documents) return plan('sync', documents);
  const writing = row.newest_age_ms !== null && row.newest_age_ms < STALLED_MS;
  if (row.running > 0 && writing) return plan('wait', documents);
  return plan('rebuild', documents);
}
