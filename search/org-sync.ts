import type { Meilisearch } from 'meilisearch';
import type { Db } from '../shared/db.js';
import { InOrder } from '../shared/in-order.js';
import { indexState } from './index-definition.js';
import {
  type ReplicaName,
  settleOutboxBatch,
  takeOutboxBatch,
  withIndexerLock,
} from './index-sync.repository.js';
import { succeeded } from './meili-client.js';
import { type OrgRowForIndex, toOrgDocument } from './org-document.js';
import { readOrgRows } from './org-rows.read-model.js';

/**
 * Brings the search index up to date with the Org changes queued in search_outbox. Outbox rows are
 * deleted only after Meilisearch reported the task holding their Orgs as succeeded, so a failed
 * task, a crash while waiting, or a Meilisearch that is down leaves them in place for the next run:
 * nothing is lost, and the index catches up. Runs under the indexer lock (index-sync.repository.ts).
 */
export interface SyncDeps {
  db: Db;
  /** A client with an indexing timeout (createMeiliClient(conn, INDEXING_TIMEOUT_MS)). */
  meili: Meilisearch;
  /** The live index name (config MEILI_INDEX). */
  indexUid: string;
  /** The replica `meili` is, with several (search/replicas.ts): its own lock and progress. */
  replica?: ReplicaName;
}

export interface SyncOptions {
  /** Org ids per Meilisearch task. */
  batchIds?: number;
  /** Tasks in flight before waiting for the oldest. */
  depth?: number;
  /** Stop after this many batches (the next run goes on); unbounded by default. */
  maxBatches?: number;
  /**
   * Asked before a batch is taken, at most every KEEP_GOING_EVERY_MS: false ends the run there (what
   * is in flight is finished). The indexer uses it to stop syncing once the backlog is better
   * rebuilt (search/catch-up.ts): a run drains the outbox while writers keep filling it.
   */
  keepGoing?: () => Promise<boolean>;
  /** How often keepGoing is asked (default KEEP_GOING_EVERY_MS; 0: before every batch). */
  keepGoingEveryMs?: number;
}

export const KEEP_GOING_EVERY_MS = 5_000;

export interface SyncResult {
  /** False when another indexer held the lock and this run did nothing. */
  ran: boolean;
  /**
   * True when the live index is of an older format: nothing was written, and the changes wait in
   * the outbox for the index `bizdir reindex` swaps in (IndexOutdatedError says so to operators).
   */
  olderIndex?: true;
  indexed: number;
  removed: number;
  batches: number;
}

/** Posts documents (and removals) to one index; resolves when Meilisearch applied them. */
export async function writeDocuments(
  meili: Meilisearch,
  indexUid: string,
  rows: readonly OrgRowForIndex[],
  gone: number[],
): Promise<void> {
  const index = meili.index(indexUid);
  const docs = rows.map(toOrgDocument);
  const waits: Promise<unknown>[] = [];
  if (docs.length > 0) waits.push(succeeded(index.addDocuments(docs, { primaryKey: 'id' })));
  if (gone.length > 0) waits.push(succeeded(index.deleteDocuments(gone)));
  await Promise.all(waits);
}

/** One batch of outbox rows, written to the index. */
interface Batch {
  seqs: number[];
  ids: number[];
  removed: number;
}

/** Drains search_outbox into the live index. Throws (leaving the outbox intact) when Meilisearch fails. */
export async function syncOutbox(deps: SyncDeps, options: SyncOptions = {}): Promise<SyncResult> {
  const batchIds = options.batchIds ?? 20_000;
  const depth = options.depth ?? 3;
  const maxBatches = options.maxBatches ?? Number.POSITIVE_INFINITY;
  const { replica } = deps;
  const result = await withIndexerLock(
    deps.db,
    false,
    async () => {
      let indexed = 0;
      let removed = 0;
      let batches = 0;
      let lastSeq = 0;
      // Read under the lock: a rebuild swaps its index in only while holding it.
      if ((await indexState(deps.meili, deps.indexUid)) === 'older')
        return { indexed, removed, batches, olderIndex: true as const };
      // Batches are settled (outbox rows deleted) in the order they were taken, each once its task
      // succeeded, so the outbox never loses a row whose change is not in the index yet.
      const writes = new InOrder<Batch>(depth, async (batch) => {
        await settleOutboxBatch(deps.db, batch.seqs, batch.ids, replica);
        indexed += batch.ids.length - batch.removed;
        removed += batch.removed;
      });
      try {
        let asked = Date.now();
        while (batches < maxBatches) {
          if (options.keepGoing && Date.now() - asked >= (options.keepGoingEveryMs ?? KEEP_GOING_EVERY_MS)) {
            if (!(await options.keepGoing())) break;
            asked = Date.now();
          }
          const rows = await takeOutboxBatch(deps.db, lastSeq, batchIds, replica);
          if (rows.length === 0) break;
          lastSeq = rows[rows.length - 1]!.seq;
          const ids = [...new Set(rows.flatMap((r) => r.org_ids))];
          const { rows: orgRows, gone } = await readOrgRows(deps.db, ids);
          const batch = { seqs: rows.map((r) => r.seq), ids, removed: gone.length };
          batches++;
          await writes.add(writeDocuments(deps.meili, deps.indexUid, orgRows, gone).then(() => batch));
        }
        await writes.drain();
      } finally {
        // On failure, let the other requests finish before the lock is released, so a next run cannot
        // overtake a write that is still in flight.
        await writes.quiesce();
      }
      return { indexed, removed, batches };
    },
    replica,
  );
  return result.locked ? { ran: true, ...result.value } : { ran: false, indexed: 0, removed: 0, batches: 0 };
}
