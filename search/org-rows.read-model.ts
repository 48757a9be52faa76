import { sql } from 'kysely';
import type { Db } from '../shared/db.js';
import { type OrgRowForIndex, withUid } from './org-document.js';

/** The Org rows the index is made from: by id (sync, replay), by keyset pages (rebuild, verify). */

/** The current rows of the given Orgs; ids with no row are gone from Postgres. */
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

/** Up to `limit` Orgs with ids in (after, upTo], by id. */
export async function orgRowsAfter(db: Db, after: number, upTo: number, limit: number) {
  return db
    .selectFrom('orgs')
    .select(['id', 'name', 'version_number', sql<Date>`updated`.as('updated')])
    .where('id', '>', after)
    .where('id', '<=', upTo)
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** How many Orgs have an id up to `upTo`. */
export async function countOrgs(db: Db, upTo: number): Promise<number> {
  const row = await db
    .selectFrom('orgs')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('id', '<=', upTo)
    .executeTakeFirstOrThrow();
  return row.n;
}

/** The largest Org id (0 with no Orgs). */
export async function maxOrgId(db: Db): Promise<number> {
  const row = await db
    .selectFrom('orgs')
    .select(sql<string>`coalesce(max(id), 0)`.as('m'))
    .executeTakeFirstOrThrow();
  return Number(row.m);
}

/** Up to `limit` Orgs after `after`, by id, with what `reindex --verify` compares. */
export async function orgVersionsAfter(db: Db, after: number, limit: number) {
  return db
    .selectFrom('orgs')
    .select(['id', 'name', 'version_number'])
    .where('id', '>', after)
    .orderBy('id')
    .limit(limit)
    .execute();
}
