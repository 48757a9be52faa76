import { sql } from 'kysely';
import type { Db } from '../shared/db.js';
import { bizdirUid, parseDomain } from '../shared/domains.js';
import { orgsWithDomains } from '../shared/org-domains.read-model.js';
import { withUid } from './org-document.js';
import type { NameRow } from './search-query.js';

/**
 * What a search reads from Postgres: the Orgs a domain names (the index does not hold domains), the
 * names of a few Orgs (relevance tiers), and the Orgs changed but not yet applied to the index, with
 * their current rows (fresh-changes.ts).
 */

/** Ids of the Orgs (zero or one) whose stable or public domain, old labels included, equals q. */
export async function orgIdsForDomain(db: Db, q: string, suffix: string): Promise<number[]> {
  const ref = parseDomain(q, suffix);
  if (ref?.kind !== 'org' && ref?.kind !== 'org-public') return [];
  const rows = await db
    .selectFrom(orgsWithDomains([ref]).as('d'))
    .select('d.org_id')
    .execute();
  return rows.map((r) => Number(r.org_id));
}

export async function namesOf(db: Db, ids: readonly number[]): Promise<Map<number, NameRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('orgs')
    .select(['id', 'name'])
    .where('id', '=', sql<number>`any(${ids}::bigint[])`)
    .execute();
  return new Map(rows.map((r) => [Number(r.id), { name: r.name, uid: bizdirUid(Number(r.id)) }]));
}

/**
 * While the outbox holds at most this many Orgs, they are searched beside the index
 * (fresh-changes.ts); more (a bulk import being indexed), and the index is searched as it stands.
 */
export const FRESH_MAX = 1_000;

/**
 * The ids of the Orgs changed but not yet confirmed in the index, or null when there are too many.
 * With replicas (search/replicas.ts), those `replica` has not confirmed; for a replica the indexer
 * has not registered yet, the whole outbox (a superset: leaving out and matching an Org the index
 * already holds changes no answer).
 */
export async function pendingOrgIds(db: Db, max = FRESH_MAX, replica?: string): Promise<number[] | null> {
  if (replica !== undefined) {
    const mine = await replicaPendingOrgIds(db, max, replica);
    if (mine !== 'unregistered') return mine;
  }
  // `id_count` (migration 0019_outbox_id_count) is stored beside each row, so the size check reads
  // no id array; `max + 1` rows of at least one id each already exceed max.
  const { rows } = await sql<{ ids: string[] | null; over: boolean }>`
    with head as (select id_count from search_outbox order by seq limit ${max + 1})
    select (select coalesce(sum(id_count), 0) from head) > ${max} as over,
           case when (select coalesce(sum(id_count), 0) from head) > ${max} then null
                else (select array_agg(distinct x) from search_outbox o, unnest(o.org_ids) x) end as ids`.execute(
    db,
  );
  const row = rows[0];
  if (!row || row.over) return null;
  return (row.ids ?? []).map(Number);
}

async function replicaPendingOrgIds(
  db: Db,
  max: number,
  replica: string,
): Promise<number[] | null | 'unregistered'> {
  const { rows } = await sql<{ registered: boolean; ids: string[] | null; over: boolean }>`
    with head as (select o.id_count from search_replica_pending p join search_outbox o on o.seq = p.seq
                  where p.replica = ${replica} order by p.seq limit ${max + 1})
    select exists (select 1 from search_replicas where name = ${replica}) as registered,
           (select coalesce(sum(id_count), 0) from head) > ${max} as over,
           case when (select coalesce(sum(id_count), 0) from head) > ${max} then null
                else (select array_agg(distinct x) from search_replica_pending p
                        join search_outbox o on o.seq = p.seq, unnest(o.org_ids) x
                      where p.replica = ${replica}) end as ids`.execute(db);
  const row = rows[0];
  if (!row?.registered) return 'unregistered';
  if (row.over) return null;
  return (row.ids ?? []).map(Number);
}

export interface FreshRow {
  id: number;
  uid: string;
  name: string;
  updated: Date;
}

export async function freshRows(db: Db, ids: readonly number[]): Promise<Map<number, FreshRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('orgs')
    .select(['id', 'name', sql<Date>`updated`.as('updated')])
    .where('id', '=', sql<number>`any(${ids}::bigint[])`)
    .execute();
  return new Map(rows.map((r) => [Number(r.id), withUid(r)]));
}
