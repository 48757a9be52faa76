import { sql } from 'kysely';
import type { Meilisearch } from 'meilisearch';
import type { Db } from '../shared/db.js';
import { observeLater } from '../shared/outage.js';
import { indexState } from './index-definition.js';
import { succeeded } from './meili-client.js';
import { type OrgRowForIndex, toOrgDocument, withUid } from './org-document.js';

/**
 * Brings the search index up to date with the Org changes queued in search_outbox (written by the
 * triggers of migration 0004). Outbox rows are deleted only after Meilisearch reported the task
 * holding their Orgs as succeeded, so a failed task, a crash while waiting, or a Meilisearch that is
 * down leaves them in place for the next run: nothing is lost, and the index catches up.
 *
 * One indexer at a time (a session advisory lock): two indexers could otherwise read an Org at
 * different versions and let the older one land last. `bizdir reindex` takes the same lock to
 * register its new index and to replay and swap, so neither misses the other's changes.
 */
export const INDEXER_LOCK = 7_310_405_001;

/**
 * The pooled connections one indexing job can hold at once (jobs/worker.ts sizes the worker's pool
 * from it): the indexer lock, held on a connection of its own for the whole sync or rebuild
 * (withIndexerLock), and one for its statements, which run one at a time.
 */
export const INDEX_JOB_CONNECTIONS = 2;

export interface SyncDeps {
  db: Db;
  /** A client with an indexing timeout (createMeiliClient(conn, INDEXING_TIMEOUT_MS)). */
  meili: Meilisearch;
  /** The live index name (config MEILI_INDEX). */
  indexUid: string;
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

interface OutboxRow {
  seq: number;
  org_ids: number[];
}

/** Reads the current index state of the given Orgs; ids with no row are gone from Postgres. */
export async function readOrgRows(
  db: Db,
  ids: readonly number[],
): Promise<{ rows: OrgRowForIndex[]; gone: number[] }> {
  const rows = (
    await db
      .selectFrom('orgs')
      .select(['id', 'name', 'version_number', sql<Date>`updated`.as('updated')])
      .where('id', '=', sql<number>`any(${ids}::bigint[])`)
      .execute()
  ).map(withUid);
  const found = new Set(rows.map((r) => r.id));
  return { rows, gone: ids.filter((id) => !found.has(id)) };
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

/** Runs fn while holding the indexer lock on one connection; blocks when `wait`, else skips. */
export async function withIndexerLock<T>(
  db: Db,
  wait: boolean,
  fn: () => Promise<T>,
): Promise<{ locked: true; value: T } | { locked: false }> {
  return db.connection().execute(async (conn) => {
    if (wait) {
      await sql`select pg_advisory_lock(${INDEXER_LOCK})`.execute(conn);
    } else {
      const got = await sql<{ ok: boolean }>`select pg_try_advisory_lock(${INDEXER_LOCK}) as ok`.execute(
        conn,
      );
      if (!got.rows[0]?.ok) return { locked: false };
    }
    try {
      return { locked: true, value: await fn() };
    } finally {
      await sql`select pg_advisory_unlock(${INDEXER_LOCK})`.execute(conn);
    }
  });
}

interface Batch {
  seqs: number[];
  ids: number[];
  done: Promise<void>;
  removed: number;
}

async function takeBatch(db: Db, afterSeq: number, batchIds: number): Promise<OutboxRow[]> {
  // Rows are small (one per import statement); read a page and keep what fits one batch.
  const rows = await db
    .selectFrom('search_outbox')
    .select(['seq', 'org_ids'])
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(200)
    .execute();
  const out: OutboxRow[] = [];
  let count = 0;
  for (const row of rows) {
    if (out.length > 0 && count + row.org_ids.length > batchIds) break;
    out.push({ seq: row.seq, org_ids: row.org_ids.map(Number) });
    count += row.org_ids.length;
  }
  return out;
}

/** Marks a batch done: records it for a running rebuild, then deletes its outbox rows. */
async function settleBatch(db: Db, batch: Batch): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const targets = await trx.selectFrom('search_reindex').select('target').execute();
    if (targets.length > 0) {
      await trx
        .insertInto('search_reindex_replay')
        .values(targets.map((t) => ({ target: t.target, org_ids: batch.ids })))
        .execute();
    }
    await trx
      .deleteFrom('search_outbox')
      .where('seq', '=', sql<number>`any(${batch.seqs}::bigint[])`)
      .execute();
  });
}

/** Drains search_outbox into the live index. Throws (leaving the outbox intact) when Meilisearch fails. */
export async function syncOutbox(deps: SyncDeps, options: SyncOptions = {}): Promise<SyncResult> {
  const batchIds = options.batchIds ?? 20_000;
  const depth = options.depth ?? 3;
  const maxBatches = options.maxBatches ?? Number.POSITIVE_INFINITY;
  const result = await withIndexerLock(deps.db, false, async () => {
    let indexed = 0;
    let removed = 0;
    let batches = 0;
    let lastSeq = 0;
    const inFlight: Batch[] = [];
    // Read under the lock: a rebuild swaps its index in only while holding it.
    if ((await indexState(deps.meili, deps.indexUid)) === 'older')
      return { indexed, removed, batches, olderIndex: true as const };
    const settleOldest = async () => {
      const batch = inFlight.shift()!;
      await batch.done;
      await settleBatch(deps.db, batch);
      indexed += batch.ids.length - batch.removed;
      removed += batch.removed;
    };
    try {
      let asked = Date.now();
      while (batches < maxBatches) {
        if (options.keepGoing && Date.now() - asked >= (options.keepGoingEveryMs ?? KEEP_GOING_EVERY_MS)) {
          if (!(await options.keepGoing())) break;
          asked = Date.now();
        }
        const rows = await takeBatch(deps.db, lastSeq, batchIds);
        if (rows.length === 0) break;
        lastSeq = rows[rows.length - 1]!.seq;
        const ids = [...new Set(rows.flatMap((r) => r.org_ids))];
        const { rows: orgRows, gone } = await readOrgRows(deps.db, ids);
        // Awaited by settleOldest, which throws its failure.
        const done = observeLater(writeDocuments(deps.meili, deps.indexUid, orgRows, gone));
        inFlight.push({ seqs: rows.map((r) => r.seq), ids, done, removed: gone.length });
        batches++;
        if (inFlight.length >= depth) await settleOldest();
      }
      while (inFlight.length > 0) await settleOldest();
    } finally {
      // On failure, let the other requests finish before the lock is released, so a next run cannot
      // overtake a write that is still in flight.
      await Promise.allSettled(inFlight.map((b) => b.done));
    }
    return { indexed, removed, batches };
  });
  return result.locked ? { ran: true, ...result.value } : { ran: false, indexed: 0, removed: 0, batches: 0 };
}

/** Org changes not yet confirmed in the index (counted in ids, duplicates included). */
export async function pendingChanges(db: Db): Promise<number> {
  const row = await db
    .selectFrom('search_outbox')
    .select(sql<number>`coalesce(sum(cardinality(org_ids)), 0)::int`.as('n'))
    .executeTakeFirstOrThrow();
  return row.n;
}
