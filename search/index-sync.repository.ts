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
 * With several replicas (search/replicas.ts) each has an indexer lock of its own, this class and the
 * hash of its name (two int4 keys: a space apart from the one bigint key above), so a replica that
 * is down or rebuilding never holds up the others.
 */
const REPLICA_LOCK_CLASS = 731_040_500;

/**
 * Which replica's progress a statement reads or writes: undefined with one Meilisearch, whose
 * progress is the outbox itself; a replica's name with several, whose progress is its rows in
 * search_replica_pending (migration 0030_search_replicas).
 */
export type ReplicaName = string | undefined;

/**
 * The pooled connections one indexing job can hold at once (jobs/worker.ts sizes the worker's pool
 * from it): the indexer lock, held on a connection of its own for the whole sync or rebuild
 * (withIndexerLock), and one for its statements, which run one at a time.
 */
export const INDEX_JOB_CONNECTIONS = 2;

/** The arguments of the advisory lock functions for a replica's indexer lock. */
const lockKey = (replica: ReplicaName) =>
  replica === undefined
    ? sql`${INDEXER_LOCK}::bigint`
    : sql`${REPLICA_LOCK_CLASS}::int, hashtext(${replica})`;

/**
 * Runs fn while holding the indexer lock (of `replica`, with several) on one connection; blocks when
 * `wait`, else skips.
 */
export async function withIndexerLock<T>(
  db: Db,
  wait: boolean,
  fn: () => Promise<T>,
  replica?: ReplicaName,
): Promise<{ locked: true; value: T } | { locked: false }> {
  const key = lockKey(replica);
  return db.connection().execute(async (conn) => {
    if (wait) {
      await sql`select pg_advisory_lock(${key})`.execute(conn);
    } else {
      const got = await sql<{ ok: boolean }>`select pg_try_advisory_lock(${key}) as ok`.execute(conn);
      if (!got.rows[0]?.ok) return { locked: false };
    }
    try {
      return { locked: true, value: await fn() };
    } finally {
      await sql`select pg_advisory_unlock(${key})`.execute(conn);
    }
  });
}

/** The outbox rows pending for `replica` (all of them with one Meilisearch), as a table `o`. */
const pendingFor = (db: Db, replica: ReplicaName) =>
  replica === undefined
    ? db.selectFrom('search_outbox as o')
    : db
        .selectFrom('search_outbox as o')
        .innerJoin('search_replica_pending as p', (join) =>
          join.onRef('p.seq', '=', 'o.seq').on('p.replica', '=', replica),
        );

export interface OutboxRow {
  seq: number;
  org_ids: number[];
}

/**
 * The outbox rows (pending for `replica`) after `afterSeq`, in order, as many as fit `batchIds` Org
 * ids (at least one row).
 */
export async function takeOutboxBatch(
  db: Db,
  afterSeq: number,
  batchIds: number,
  replica?: ReplicaName,
): Promise<OutboxRow[]> {
  // Rows are small (one per import statement); read a page and keep what fits one batch.
  const rows = await pendingFor(db, replica)
    .select(['o.seq', 'o.org_ids'])
    .where('o.seq', '>', afterSeq)
    .orderBy('o.seq')
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
 * Marks a batch confirmed in the live index (of `replica`): records its Orgs for every rebuild in
 * progress (they are written again into its index before the swap; a rebuild of another replica
 * rewrites a few Orgs for nothing), then settles its outbox rows (settleSeqs).
 */
export async function settleOutboxBatch(
  db: Db,
  seqs: readonly number[],
  orgIds: readonly number[],
  replica?: ReplicaName,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const targets = await trx.selectFrom('search_reindex').select('target').execute();
    if (targets.length > 0) {
      await trx
        .insertInto('search_reindex_replay')
        .values(targets.map((t) => ({ target: t.target, org_ids: [...orgIds] })))
        .execute();
    }
    await settleSeqs(trx, seqs, replica);
  });
}

/**
 * Outbox rows confirmed by `replica`'s index: deleted with one Meilisearch; with several, no longer
 * pending for it, and deleted once no replica has them pending. The rows are locked first, so of two
 * replicas settling the same row at once the second sees the first's delete and removes the row.
 */
async function settleSeqs(trx: Db, seqs: readonly number[], replica: ReplicaName): Promise<void> {
  const inSeqs = sql<number>`any(${seqs}::bigint[])`;
  if (replica === undefined) {
    await trx.deleteFrom('search_outbox').where('seq', '=', inSeqs).execute();
    return;
  }
  await trx
    .selectFrom('search_outbox')
    .select('seq')
    .where('seq', '=', inSeqs)
    .orderBy('seq')
    .forUpdate()
    .execute();
  await trx
    .deleteFrom('search_replica_pending')
    .where('replica', '=', replica)
    .where('seq', '=', inSeqs)
    .execute();
  await trx
    .deleteFrom('search_outbox as o')
    .where('o.seq', '=', inSeqs)
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('search_replica_pending as p').select('p.seq').whereRef('p.seq', '=', 'o.seq'))),
    )
    .execute();
}

/** Org changes not yet confirmed in the index (of `replica`; counted in ids, duplicates included). */
export async function pendingChanges(db: Db, replica?: ReplicaName): Promise<number> {
  const row = await pendingFor(db, replica)
    .select(sql<number>`coalesce(sum(cardinality(o.org_ids)), 0)::int`.as('n'))
    .executeTakeFirstOrThrow();
  return row.n;
}

/** Every outbox row's (pending for `replica`) seq and how many Org ids it holds. */
export async function outboxSizes(
  db: Db,
  replica?: ReplicaName,
): Promise<{ seq: number; id_count: number }[]> {
  const rows = await pendingFor(db, replica).select(['o.seq', 'o.id_count']).execute();
  return rows.map((r) => ({ seq: Number(r.seq), id_count: Number(r.id_count) }));
}

/** The seqs of every outbox row (pending for `replica`). */
export async function outboxSeqs(db: Db, replica?: ReplicaName): Promise<number[]> {
  const rows = await pendingFor(db, replica).select('o.seq').execute();
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

/** Outbox rows a rebuild of `replica`'s index made unnecessary (settled as a sync settles them). */
export async function deleteOutboxRows(
  db: Db,
  seqs: readonly number[],
  replica?: ReplicaName,
): Promise<void> {
  await db.transaction().execute((trx) => settleSeqs(trx, seqs, replica));
}

/** Registers a rebuild's new index: from now on the sync records the Orgs it writes for it. */
export async function registerRebuild(db: Db, target: string, replica?: ReplicaName): Promise<void> {
  await db
    .insertInto('search_reindex')
    .values({ target, replica: replica ?? '' })
    .execute();
}

export async function unregisterRebuild(db: Db, target: string): Promise<void> {
  await db.deleteFrom('search_reindex').where('target', '=', target).execute();
}

/** The new indexes of the rebuilds registered for `replica` (a later `reindex` clears the earlier ones). */
export async function registeredRebuilds(db: Db, replica?: ReplicaName): Promise<string[]> {
  const rows = await db
    .selectFrom('search_reindex')
    .select('target')
    .where('replica', '=', replica ?? '')
    .execute();
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

/**
 * The outbox's size and age (the rows pending for `replica`), and the import runs in progress, in
 * one read (search/catch-up.ts).
 */
export async function backlogState(db: Db, replica?: ReplicaName): Promise<BacklogState> {
  const mine =
    replica === undefined
      ? sql`search_outbox`
      : sql`(select o.* from search_outbox o join search_replica_pending p
               on p.seq = o.seq and p.replica = ${replica})`;
  const { rows } = await sql<BacklogState>`
    select (select coalesce(sum(id_count), 0)::int from ${mine} m) as pending,
           (select (extract(epoch from now() - max(created_at)) * 1000)::float8 from ${mine} m) as newest_age_ms,
           (select count(*)::int from import_runs where status = 'running') as running`.execute(db);
  return rows[0]!;
}
