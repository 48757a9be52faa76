import { type ExpressionBuilder, sql } from 'kysely';
import type { Db } from '../../shared/db.js';
import type { DomainRef } from '../../shared/domains.js';
import { hasUid, uidOf } from '../../shared/org-domains.read-model.js';
import type { Database, HoursJson, LinksJson, PhonesJson } from '../../shared/tables.js';
import { addressJson } from '../records/nested-record.read-model.js';
import { arg, PreparedQuery } from '../records/prepared.js';
import {
  type AddressRecord,
  LOCATION_JSON_COLUMNS,
  type LocationRecord,
  type LocationWithOrgRecord,
} from '../records/records.js';

export type LocationRef = Extract<DomainRef, { kind: 'location' | 'location-public' }>;

/**
 * Matches a Location by stable domain, current public domain, or any public domain it held before.
 * The public case is a union of two index lookups, not `public_slug = $1 or id in (...)`, which
 * Postgres can answer only by scanning locations (as in shared/org-domains.read-model.ts for Orgs).
 */
function matchesRef(eb: ExpressionBuilder<Database, 'locations'>, ref: LocationRef) {
  if (ref.kind === 'location') {
    return eb.and([hasUid('locations', ref.uid), eb('locations.domain_cc', '=', ref.cc)]);
  }
  const holders = eb
    .selectFrom('locations as now')
    .select('now.id as location_id')
    .where('now.public_slug', '=', ref.slug)
    .union(
      eb
        .selectFrom('location_public_domains')
        .select('location_public_domains.location_id')
        .where('location_public_domains.slug', '=', ref.slug),
    );
  return eb('locations.id', 'in', eb.selectFrom(holders.as('h')).select('h.location_id'));
}

/** The JSON columns and `updated` are selected apart, below; the rest of the record's columns as they are. */
type TypedApart = 'phones' | 'hours' | 'links' | 'updated';
const APART: readonly string[] = ['phones', 'hours', 'links', 'updated'] satisfies TypedApart[];
const LOCATION_COLUMNS = LOCATION_JSON_COLUMNS.filter((c) => !APART.includes(c)).map(
  (c) => `locations.${c}` as `locations.${Exclude<(typeof LOCATION_JSON_COLUMNS)[number], TypedApart>}`,
);

// database.ts types these columns as Generated<Json<T>> / Generated<Timestamp>, which Kysely does not unwrap on select;
// naming the runtime type here keeps the records honest.
const JSON_COLUMNS = [
  sql<PhonesJson>`locations.phones`.as('phones'),
  sql<HoursJson>`locations.hours`.as('hours'),
  sql<LinksJson>`locations.links`.as('links'),
  sql<Date>`locations.updated`.as('updated'),
] as const;

export async function findLocationByRef(
  db: Db,
  ref: LocationRef,
): Promise<LocationWithOrgRecord | undefined> {
  return locationQuery(db, ref).executeTakeFirst();
}

function locationQuery(db: Db, ref: LocationRef) {
  return db
    .selectFrom('locations')
    .innerJoin('orgs', 'orgs.id', 'locations.org_id')
    .leftJoin('addresses', 'addresses.id', 'locations.address_id')
    .select(LOCATION_COLUMNS)
    .select(JSON_COLUMNS)
    .select([
      uidOf('orgs').as('org_uid'),
      'orgs.domain_cc as org_domain_cc',
      addressJson('addresses').as('address'),
    ])
    .where((eb) => matchesRef(eb, ref))
    .limit(1);
}

/** findLocationByRef as prepared statements (see prepared.ts). Arguments: `uid` and `cc`, or `slug`. */
export function prepareLocationByRef(db: Db) {
  return {
    stable: new PreparedQuery<LocationWithOrgRecord>(
      'bizdir_location_by_domain',
      locationQuery(db, { kind: 'location', uid: arg('uid'), cc: arg('cc') }),
    ),
    public: new PreparedQuery<LocationWithOrgRecord>(
      'bizdir_location_by_public_domain',
      locationQuery(db, { kind: 'location-public', slug: arg('slug') }),
    ),
  };
}

export async function countOrgLocations(db: Db, orgId: number): Promise<number> {
  const row = await db
    .selectFrom('locations')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('org_id', '=', orgId)
    .executeTakeFirstOrThrow();
  return row.n;
}

/** One page of an Org's Locations: the default first, then by name, then by stable domain. */
export async function listOrgLocations(
  db: Db,
  orgId: number,
  limit: number,
  offset: number,
): Promise<(LocationRecord & { address: AddressRecord | null })[]> {
  return (
    db
      .selectFrom('locations')
      .leftJoin('addresses', 'addresses.id', 'locations.address_id')
      .select(LOCATION_COLUMNS)
      .select(JSON_COLUMNS)
      .select(addressJson('addresses').as('address'))
      .where('locations.org_id', '=', orgId)
      .orderBy('locations.is_default', 'desc')
      // Case-insensitive by name, then byte order, so the order does not depend on the server's locale.
      .orderBy(sql`lower(locations.name) collate "C"`, (ob) => ob.asc().nullsLast())
      .orderBy(sql`locations.name collate "C"`)
      .orderBy('locations.uid')
      .orderBy('locations.domain_cc')
      .limit(limit)
      .offset(offset)
      .execute()
  );
}
