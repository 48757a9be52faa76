import { sql } from 'kysely';
import type { Db } from '../../shared/db.js';

// Org changes committed in Postgres but not yet confirmed by Meilisearch wait in search_outbox
// (written by the triggers of migration 0003_search, drained by the `index-orgs` job).

/** Org change batches waiting to reach the search index. */
export async function pendingIndexChanges(db: Db): Promise<number> {
  const row = await db
    .selectFrom('search_outbox')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Age in seconds of the oldest change waiting: how far search is behind (0 when none waits). */
export async function indexLagSeconds(db: Db): Promise<number> {
  const row = await db
    .selectFrom('search_outbox')
    .select(sql<number | null>`extract(epoch from now() - min(created_at))::float8`.as('age'))
    .executeTakeFirst();
  return row?.age ?? 0;
}
