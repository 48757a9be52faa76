import { sql } from 'kysely';
import type pg from 'pg';
import type { Db } from '../../shared/db.js';
import { type OrgDomainRef, orgHasDomain, uidOf } from '../../shared/org-domains.read-model.js';
import type { PhonesJson } from '../../shared/tables.js';
import { addressJson, locationJson } from '../records/nested-record.read-model.js';
import { arg, PreparedQuery } from '../records/prepared.js';
import { ORG_COLUMNS, type OrgColumn, type OrgRecord } from '../records/records.js';

/**
 * An Org column of the record as a select expression. Typed here: database.ts's Generated<Json<T>> /
 * Generated<Timestamp> are not unwrapped by Kysely.
 */
function orgColumn(c: OrgColumn) {
  if (c === 'phones') return sql<PhonesJson>`orgs.phones`.as('phones');
  if (c === 'updated') return sql<Date>`orgs.updated`.as('updated');
  if (c === 'uid') return uidOf('orgs').as('uid');
  return `orgs.${c}` as const;
}

/**
 * The whole Org in one indexed query: registered address, default Location with its address, and the
 * count of open Locations (closed_date unset or still ahead). Search reads Orgs through the same query.
 */
function orgQuery(db: Db) {
  return db
    .selectFrom('orgs')
    .leftJoin('addresses as ra', 'ra.id', 'orgs.registered_address_id')
    .leftJoin('locations as dl', (join) =>
      // A literal, not a bind parameter, so the planner can use the partial index locations_one_default.
      join.onRef('dl.org_id', '=', 'orgs.id').on(sql<boolean>`dl.is_default`),
    )
    .leftJoin('addresses as da', 'da.id', 'dl.address_id')
    .select([
      ...ORG_COLUMNS.map(orgColumn),
      addressJson('ra').as('registered_address'),
      locationJson('dl').as('default_location'),
      addressJson('da').as('default_address'),
      sql<number>`(select count(*) from locations ol
        where ol.org_id = orgs.id and (ol.closed_date is null or ol.closed_date > (now() at time zone 'UTC')::date))`.as(
        'open_locations',
      ),
    ]);
}

export async function findOrgByRef(db: Db, ref: OrgDomainRef): Promise<OrgRecord | undefined> {
  const row = await orgQuery(db)
    .where((eb) => orgHasDomain(eb, ref))
    .limit(1)
    .executeTakeFirst();
  return row;
}

/**
 * Orgs by internal id, in the order of `ids` (ids with no Org are skipped), for search results: one
 * named prepared statement (prepared.ts). A page of ids of any length is one array argument, so
 * Postgres plans the query once per connection instead of once per search (a page's Orgs come
 * faster: docs/journal/2026-11-27.md, 23:24), and no query is built in JavaScript per search.
 */
export function prepareOrgsByIds(db: Db) {
  const query = new PreparedQuery<OrgRecord>(
    'bizdir_orgs_by_ids',
    orgQuery(db).where('orgs.id', '=', sql<number>`any(${arg('ids')}::bigint[])`),
  );
  return async (pool: pg.Pool, ids: readonly number[]): Promise<OrgRecord[]> => {
    if (ids.length === 0) return [];
    const rows = await query.run(pool, { ids });
    const byId = new Map(rows.map((r) => [Number(r.id), r]));
    return ids.flatMap((id) => byId.get(id) ?? []);
  };
}

/** The internal id of the Org a domain names, for routes that only need to know it exists. */
export async function findOrgIdByRef(db: Db, ref: OrgDomainRef) {
  return db
    .selectFrom('orgs')
    .select(['orgs.id', uidOf('orgs').as('uid'), 'orgs.domain_cc'])
    .where((eb) => orgHasDomain(eb, ref))
    .limit(1)
    .executeTakeFirst();
}

/**
 * findOrgByRef as prepared statements, one per kind of domain (see prepared.ts); for the API's
 * single-Org read. Arguments: `uid` and `cc`, or `slug`.
 */
export function prepareOrgByRef(db: Db) {
  const byArgs = (ref: OrgDomainRef) =>
    orgQuery(db)
      .where((eb) => orgHasDomain(eb, ref))
      .limit(1);
  return {
    stable: new PreparedQuery<OrgRecord>(
      'bizdir_org_by_domain',
      byArgs({ kind: 'org', uid: arg('uid'), cc: arg('cc') }),
    ),
    public: new PreparedQuery<OrgRecord>(
      'bizdir_org_by_public_domain',
      byArgs({ kind: 'org-public', slug: arg('slug') }),
    ),
  };
}
