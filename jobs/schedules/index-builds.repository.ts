import { sql } from 'kysely';
import type { Db } from '../../shared/db.js';

/**
 * The only writer of index_build_sizes (the search index's size right after each build), and a read
 * of search_reindex (search/index-sync.repository.ts writes it): the builds registered now.
 */

export async function recordBuildSize(
  db: Db,
  size: { indexUid: string; documents: number; bytes: number },
): Promise<void> {
  await db
    .insertInto('index_build_sizes')
    .values({ index_uid: size.indexUid, documents: size.documents, bytes: size.bytes })
    .execute();
}

/** The size after the latest build of the index, if one was measured. */
export function lastBuildSize(db: Db, indexUid: string) {
  return db
    .selectFrom('index_build_sizes')
    .select(['documents', 'bytes', 'measured_at'])
    .where('index_uid', '=', indexUid)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/**
 * Index builds registered in the last `withinMs` (a `bizdir reindex`, queued or `--wait`, or a
 * catch-up after an import). A build registers before it loads and unregisters when it swaps or
 * fails; an older registration is one a dead process left, which the next build clears.
 */
export async function buildsRegistered(db: Db, withinMs: number): Promise<string[]> {
  const rows = await db
    .selectFrom('search_reindex')
    .select('target')
    .where('started_at', '>', sql<Date>`now() - make_interval(secs => ${withinMs / 1000})`)
    .execute();
  return rows.map((r) => r.target);
}
