import { sql } from 'kysely';
import type { Db } from '../shared/db.js';

/**
 * The indexing side's state in Postgres: the outbox of Org changes the index has not confirmed
 * (search_outbox, written by the triggers of migration 0004, emptied here), the rebuilds in progress
 * (search_reindex) with the Orgs synced into the live index meanwhile (search_reindex_replay), and
 * the indexer lock.
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

export interface OutboxRow {
  seq: number;
  org_ids: number[];
}

/** The outbox rows after `afterSeq`, in order, as many as fit `batchIds` Org ids (at least one row). */
export async function takeOutboxBatch(db: Db, afterSeq: number, batchIds: number): Promise<OutboxRow[]> {
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

/**
 * Marks a batch confirmed in the live index: records its Orgs for every rebuild in progress (they
 * are written again into its index before the swap), then deletes its outbox rows.
 */
export async function settleOutboxBatch(
  db: Db,
  seqs: readonly number[],
  orgIds: readonly number[],
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const targets = await trx.selectFrom('search_reindex').select('target').execute();
    if (targets.length > 0) {
      await trx
        .insertInto('search_reindex_replay')
        .values(targets.map((t) => ({ target: t.target, org_ids: [...orgIds] })))
        .execute();
    }
    await trx.deleteFrom('search_outbox').where('seq', '=', sql<number>`any(${seqs}::bigint[])`).execute();
  });
}

/** Org changes not yet confirmed in the index (counted in ids, duplicates included). */
export async function pendingChanges(db: Db): Promise<number> {
  const row = await db
    .selectFrom('search_outbox')
    .select(sql<number>`coalesce(sum(cardinality(org_ids)), 0)::int`.as('n'))
    .executeTakeFirstOrThrow();
  return row.n;
}

/** Every outbox row's seq and how many Org ids it holds. */
export async function outboxSizes(db: Db): Promise<{ seq: number; id_count: number }[]> {
  const rows = await db.selectFrom('search_outbox').select(['seq', 'id_count']).execute();
  return rows.map((r) => ({ seq: Number(r.seq), id_count: Number(r.id_count) }));
}

/** The seqs of every outbox row. */
export async function outboxSeqs(db: Db): Promise<number[]> {
  const rows = await db.selectFrom('search_outbox').select('seq').execute();
  return rows.map((r) => Number(r.seq));
}

/** The outbox rows of the given seqs (those still there). */
export async function outboxRows(db: Db, seqs: readonly number[]): Promise<OutboxRow[]> {
  const rows = await db
    .selectFrom('search_outbox')
    .select(['seq', 'org_ids'])
    .where('seq', '=', sql<number>`any(${seqs}::bigint[])`)
    .execute();
  return rows.map((r) => ({ seq: Number(r.seq), org_ids: r.org_ids.map(Number) }));
}

export async function deleteOutboxRows(db: Db, seqs: readonly number[]): Promise<void> {
  await db.deleteFrom('search_outbox').where('seq', '=', sql<number>`any(${seqs}::bigint[])`).execute();
}

/** Registers a rebuild's new index: from now on the sync records the Orgs it writes for it. */
export async function registerRebuild(db: Db, target: string): Promise<void> {
  await db.insertInto('search_reindex').values({ target }).execute();
}

export async function unregisterRebuild(db: Db, target: string): Promise<void> {
  await db.deleteFrom('search_reindex').where('target', '=', target).execute();
}

/** The new indexes of the rebuilds registered (a later `reindex` clears the earlier ones). */
export async function registeredRebuilds(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('search_reindex').select('target').execute();
  return rows.map((r) => r.target);
}

/** The Orgs the sync wrote into the live index since `target` was registered, each once. */
export async function replayedOrgIds(db: Db, target: string): Promise<number[]> {
  const rows = await db
    .selectFrom('search_reindex_replay')
    .select('org_ids')
    .where('target', '=', target)
    .execute();
  return [...new Set(rows.flatMap((r) => r.org_ids.map(Number)))];
}

export interface BacklogState {
  /** Org changes in the outbox (ids, duplicates included). */
  pending: number;
  /** How long ago the newest outbox row was written, or null when the outbox is empty. */
  newest_age_ms: number | null;
  /** Import runs in status `running`. */
  running: number;
}

/** The outbox's size and age, and the import runs in progress, in one read (search/catch-up.ts). */
export async function backlogState(db: Db): Promise<BacklogState> {
  const { rows } = await sql<BacklogState>`
    select (select coalesce(sum(id_count), 0)::int from search_outbox) as pending,
           (select (extract(epoch from now() - max(created_at)) * 1000)::float8 from search_outbox) as newest_age_ms,
           (select count(*)::int from import_runs where status = 'running') as running`.execute(db);
  return rows[0]!;
}
