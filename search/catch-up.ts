import type { Meilisearch } from 'meilisearch';
import type { Db } from '../shared/db.js';
import { type BacklogState, backlogState, type ReplicaName } from './index-sync.repository.js';
import { indexExists } from './meili-client.js';

/**
 * When the live index is far behind Postgres (a first import of the register, a monthly re-import
 * that changed much of it), building a fresh index and swapping it in (reindex.ts
 * `rebuildForBacklog`) beats syncing the backlog batch by batch: the sync of a large backlog is
 * slow and leaves the index's file larger than its used size, where one build takes minutes and
 * leaves the file at its used size (docs/benchmarks.md).
 *
 * The backlog is rebuilt when it holds at least `minOrgs` Org changes and at least REBUILD_SHARE of
 * the documents the live index holds (a rebuild costs the whole register, a sync the backlog).
 * While an import is still running, a backlog that size is not synced (each batch would re-merge
 * the whole live index); the plan says `wait`, and the indexer either waits for the import and
 * rebuilds after it (the default), or, with SEARCH_REBUILD_DURING_IMPORT=on, starts the rebuild at
 * once and lets the new index follow the import's commits until it ends (reindex.ts). On a machine
 * whose cores the import already keeps busy, following gains nothing and slows the import
 * (docs/benchmarks.md); it is meant for Meilisearch on cores of its own.
 * Searches meanwhile see the index as it was (as they would while a sync of that size caught up).
 * A run that stopped writing for STALLED_MS is not waited for.
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
 * Decides how the indexer deals with the outbox now (with replicas, with the part `replica` has
 * pending, on `meili`, that replica). `minOrgs` 0 turns rebuilding off (always sync).
 */
export async function planCatchUp(
  db: Db,
  meili: Meilisearch,
  indexUid: string,
  minOrgs: number,
  replica?: ReplicaName,
): Promise<CatchUpPlan> {
  const row = await backlogState(db, replica);
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
  return plan(isWriting(row) ? 'wait' : 'rebuild', documents);
}

/** An import run is `running` and the outbox got a row in the last STALLED_MS. */
const isWriting = (row: BacklogState) =>
  row.running > 0 && row.newest_age_ms !== null && row.newest_age_ms < STALLED_MS;

/**
 * Whether an import is still writing Org changes (as planCatchUp's `wait` sees it): a rebuild that
 * follows the import (reindex.ts `rebuildForBacklog`, option `follow`) goes on while this holds.
 */
export async function importWriting(db: Db): Promise<boolean> {
  return isWriting(await backlogState(db));
}
