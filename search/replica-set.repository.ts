import { sql } from 'kysely';
import type { Db } from '../shared/db.js';

/**
 * The replicas whose progress Postgres keeps (search_replicas, migration 0030_search_replicas). The
 * indexing worker makes the rows equal to its MEILI_URL list when it starts: none with one
 * Meilisearch (the outbox is then the one index's progress), one per replica with several.
 *
 * A replica added is given every outbox row still there as pending (its index may lack any of
 * them); the outbox is locked meanwhile, so no row written at the same moment escapes both this copy
 * and the trigger that fans new rows out. A replica removed takes its pending rows with it, and
 * outbox rows no replica has pending any more are deleted. Returns the replicas added.
 */
export async function keepReplicaSet(db: Db, names: readonly string[]): Promise<string[]> {
  const wanted = names.length > 1 ? [...names] : [];
  return db.transaction().execute(async (trx) => {
    const had = (await trx.selectFrom('search_replicas').select('name').execute()).map((r) => r.name);
    const added = wanted.filter((name) => !had.includes(name));
    const removed = had.filter((name) => !wanted.includes(name));
    if (added.length === 0 && removed.length === 0) return [];
    // Exclusive: writers of the outbox and the indexers settling it wait for this short transaction.
    await sql`lock table search_outbox in exclusive mode`.execute(trx);
    if (removed.length > 0) await trx.deleteFrom('search_replicas').where('name', 'in', removed).execute();
    for (const name of added) {
      await trx.insertInto('search_replicas').values({ name }).execute();
      await sql`insert into search_replica_pending (replica, seq) select ${name}, seq from search_outbox`.execute(
        trx,
      );
    }
    if (wanted.length > 0 && removed.length > 0) {
      await trx
        .deleteFrom('search_outbox as o')
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(selectFrom('search_replica_pending as p').select('p.seq').whereRef('p.seq', '=', 'o.seq')),
          ),
        )
        .execute();
    }
    return added;
  });
}

/** The replicas registered (empty with one Meilisearch). */
export async function registeredReplicas(db: Db): Promise<string[]> {
  return (await db.selectFrom('search_replicas').select('name').orderBy('name').execute()).map((r) => r.name);
}
