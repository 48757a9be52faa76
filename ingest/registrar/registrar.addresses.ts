import { sql, type Transaction } from 'kysely';
import type { AddressesTable, Database } from '../../shared/tables.js';
import { bulkRows, type PgArrayOf } from '../bulk-rows.js';
import type { RegistrarRecord } from './registrar.normalize.js';

/**
 * The register's writes to Addresses (each company's registered address), set-based per chunk. A new
 * company's address is inserted with its Org (registrar.orgs.ts insertOrgs); these are the others: the
 * stored hashes a chunk compares with, addresses for Orgs an older version stored without one, and
 * changed addresses, bumped by exactly 1.
 */

/** A company whose registered address is written: its Org's address id, its record, whether to bump. */
export interface AddressChange {
  existing: { address_id: number | null };
  record: RegistrarRecord;
  bump: boolean;
}

export async function addressHashes(trx: Transaction<Database>, ids: number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const { rows } = await sql<{ id: number; content_hash: string }>`
    select a.id, a.content_hash from unnest(${ids}::bigint[]) as k(id)
    cross join lateral (select id, content_hash from addresses where id = k.id limit 1) a`.execute(trx);
  return new Map(rows.map((r) => [Number(r.id), r.content_hash]));
}

/** An address of the register as one row of a bulk write (registrar addresses have no coordinates). */
const ADDRESS_ROW = {
  id: 'bigint',
  domain_cc: 'text',
  line1: 'text',
  line2: 'text',
  line3: 'text',
  city: 'text',
  state: 'text',
  zip: 'text',
  country_code: 'text',
  content_hash: 'text',
} as const satisfies Partial<Record<keyof AddressesTable, PgArrayOf>>;
const ADDRESS_COLUMNS = Object.keys(ADDRESS_ROW) as (keyof typeof ADDRESS_ROW)[];

/** Takes `n` ids from the addresses identity up front, so inserted rows are matched without guessing. */
export async function nextAddressIds(trx: Transaction<Database>, n: number): Promise<number[]> {
  const { rows } = await sql<{ id: number }>`
    select nextval(pg_get_serial_sequence('addresses', 'id')) as id from generate_series(1, ${n}::int)`.execute(
    trx,
  );
  return rows.map((r) => Number(r.id));
}

export async function insertAddresses(
  trx: Transaction<Database>,
  rows: readonly { record: RegistrarRecord }[],
  ids: number[],
  country: string,
) {
  if (rows.length === 0) return;
  const cc = country.toLowerCase();
  const values = rows.map(({ record: r }, i) => ({
    id: ids[i]!,
    domain_cc: r.address.country_code?.toLowerCase() ?? cc,
    ...r.address,
    content_hash: r.addressHash,
  }));
  // Kysely has no OVERRIDING SYSTEM VALUE (the ids are drawn up front): raw SQL, over typed columns.
  const columns = sql.join(ADDRESS_COLUMNS.map((c) => sql.id(c)));
  await sql`insert into addresses (${columns}) overriding system value
    select ${columns} from ${bulkRows('v', ADDRESS_ROW, values)}`.execute(trx);
}

export async function updateAddresses(trx: Transaction<Database>, changes: readonly AddressChange[]) {
  if (changes.length === 0) return;
  const rows = changes.map(({ existing, record: r, bump }) => ({
    ...r.address,
    id: existing.address_id,
    content_hash: r.addressHash,
    bump,
  }));
  const { domain_cc: _cc, ...addressRow } = ADDRESS_ROW;
  await trx
    .updateTable('addresses as a')
    .from(bulkRows('v', { ...addressRow, bump: 'boolean' }, rows))
    .set((eb) => ({
      line1: eb.ref('v.line1'),
      line2: eb.ref('v.line2'),
      line3: eb.ref('v.line3'),
      city: eb.ref('v.city'),
      state: eb.ref('v.state'),
      zip: eb.ref('v.zip'),
      country_code: eb.ref('v.country_code'),
      content_hash: eb.ref('v.content_hash'),
      version_number: sql<number>`a.version_number + case when v.bump then 1 else 0 end`,
      updated: sql<Date>`now()`,
    }))
    .whereRef('a.id', '=', 'v.id')
    .execute();
}
