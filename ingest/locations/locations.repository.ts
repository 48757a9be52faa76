import { sql, type Transaction } from 'kysely';
import { copyField, copyInto, copyLine } from '../../shared/pg-copy.js';
import {
  ADDRESS_FIELDS,
  type AddressField,
  LOCATION_CONTENT_FIELDS,
  type LocationContentField,
} from '../../shared/record-fields.js';
import type { AddressesTable, Database, LocationsTable } from '../../shared/tables.js';
import { bulkRows } from '../bulk-rows.js';
import type { AddressContent, EncodedLocation, LocationContent } from './locations.records.js';

/**
 * Set-based writes for the location feed: each function is one statement over a whole batch (keys
 * as array parameters; new rows through COPY, changed rows as one JSON document), so a batch costs a
 * handful of round trips whatever its size, and the number of bind parameters never grows with it.
 */

type Trx = Transaction<Database>;

/**
 * Takes `n` ids from the locations and the addresses identity sequences (one round trip). Rows are
 * then inserted with their ids known, so a Location can point at its new Address without relying
 * on the order of RETURNING rows.
 */
export async function takeIds(
  trx: Trx,
  locations: number,
  addresses: number,
): Promise<{ locations: number[]; addresses: number[] }> {
  if (locations === 0 && addresses === 0) return { locations: [], addresses: [] };
  // Each sequence is looked up once (the `offset 0` subquery is not flattened), not per row:
  // pg_get_serial_sequence reads the catalog at each call (27 ms instead of 5 ms for 5,000 + 5,000 ids).
  // The ids come back as two comma-separated strings: one row to parse instead of thousands.
  const idsFrom = (table: 'locations' | 'addresses', n: number) => sql`(
    select string_agg(nextval(q.seq)::text, ',')
    from (select pg_get_serial_sequence(${table}, 'id')::regclass as seq offset 0) q,
      generate_series(1, ${n}::int))`;
  const { rows } = await sql<{ l: string | null; a: string | null }>`
    select ${idsFrom('locations', locations)} as l, ${idsFrom('addresses', addresses)} as a`.execute(trx);
  const ids = (list: string | null | undefined) =>
    list
      ? list
          .split(',')
          .map(Number)
          .sort((x, y) => x - y)
      : [];
  return { locations: ids(rows[0]?.l), addresses: ids(rows[0]?.a) };
}

export interface AddressWrite {
  id: number;
  domain_cc: string;
  content: AddressContent;
  hash: string;
}

/** A new Address: its keys, and the COPY text of its other columns (NewLocationCopy). */
export interface NewAddress {
  id: number;
  domain_cc: string;
  copy: string;
}

/**
 * The columns the writer sends for an Address (the postal fields of record-fields.ts between its
 * keys and its hash), in COPY order; the compiler checks them against the addresses table.
 */
const ADDRESS_COLUMNS = [
  'id',
  'domain_cc',
  ...ADDRESS_FIELDS,
  'content_hash',
] as const satisfies readonly (keyof AddressesTable)[];
type AddressColumn = (typeof ADDRESS_COLUMNS)[number];
/** What an update sets from the batch document: everything but the Address's id and domain. */
const ADDRESS_UPDATED: readonly AddressColumn[] = [...ADDRESS_FIELDS, 'content_hash'];

/** An Address row's values, by column (the typed row the COPY line and the JSON document are built from). */
function addressRow(r: AddressWrite): Record<AddressColumn, string | number | null> {
  return { id: r.id, domain_cc: r.domain_cc, ...r.content, content_hash: r.hash };
}

/**
 * Changed rows (updates) travel as one JSON document read by json_to_recordset (new rows go through
 * COPY, below): one native JSON.stringify here and one parse in Postgres, instead of a dozen array
 * parameters escaped element by element. Nested values ride along as text and are cast per row
 * (jsonb, text[]): measured, that is several times cheaper than letting json_to_recordset build
 * jsonb or arrays itself, or unnesting in subqueries.
 */
const ADDRESS_RECORD = sql.raw(
  `v(${ADDRESS_COLUMNS.map((c) => `${c} ${c === 'id' ? 'bigint' : 'text'}`).join(', ')}, bump boolean)`,
);

/** `col = v.col, ...` for an update from a json_to_recordset `v`, with each column's cast. */
const setFromV = (columns: readonly string[], cast: (c: string) => string = () => '') =>
  sql.raw(columns.map((c) => `${c} = v.${c}${cast(c)}`).join(', '));

/** New Addresses, through COPY (pg-copy.ts): the ids were taken beforehand (takeIds). */
export async function insertAddresses(trx: Trx, rows: readonly (AddressWrite | NewAddress)[]): Promise<void> {
  const lines = rows.map((r) => {
    if ('copy' in r) return `${r.id}\t${copyField(r.domain_cc)}\t${r.copy}\n`;
    const row = addressRow(r);
    return copyLine(ADDRESS_COLUMNS.map((c) => row[c]));
  });
  await copyInto(trx, 'addresses', ADDRESS_COLUMNS, asOneChunk(lines));
}

/**
 * A batch's COPY lines as one string, handed to copyInto as its only chunk. copyInto sends its lines
 * 500 at a time, each chunk pulled after the socket took the one before: every pull waits for the
 * event loop, which the read-ahead keeps busy in slices, while Postgres waits for data. One chunk
 * (a few MB: the lines are flat, so joining them is one copy) is written at once and the socket sends
 * it on its own.
 */
const asOneChunk = (lines: readonly string[]) => (lines.length === 0 ? [] : [lines.join('')]);

/** A changed Address: new content, `updated` now, version + 1 unless this run already bumped it. */
export async function updateAddresses(
  trx: Trx,
  rows: readonly (AddressWrite & { bump: boolean })[],
): Promise<void> {
  if (rows.length === 0) return;
  const json = JSON.stringify(rows.map((r) => ({ ...addressRow(r), bump: r.bump })));
  await sql`
    update addresses a set ${setFromV(ADDRESS_UPDATED)},
      version_number = a.version_number + case when v.bump then 1 else 0 end, updated = now()
    from json_to_recordset(${json}::json) as ${ADDRESS_RECORD}
    where a.id = v.id`.execute(trx);
}

/** A Location's keys and place, written alike for a new and a changed Location. */
interface LocationKeys {
  id: number;
  org_id: number;
  code: string;
  domain_cc: string;
  public_slug: string;
  address_id: number;
  position: number;
}

export interface LocationWrite extends LocationKeys {
  content: LocationContent;
  encoded: EncodedLocation;
  hash: string;
  /** See locations.source_fingerprint; null for a row that had warnings. */
  fingerprint: string | null;
  /** False when this run already bumped the Location (a store code repeated in the sheet). */
  bump: boolean;
}

/** A new Location: its keys, and the COPY text of its content, hash and fingerprint (NewLocationCopy). */
export interface NewLocation extends LocationKeys {
  /** Always true: a new Location is version 1 (kept for the plan's readers). */
  bump: true;
  copy: string;
}

/**
 * The columns the writer sends for a Location, in COPY order: its keys, the content fields of
 * record-fields.ts, its hash, fingerprint and run. The compiler checks them against the table.
 */
/** Columns written from the LocationWrite member of the same name. */
const KEY_COLUMNS = [
  'id',
  'org_id',
  'code',
  'domain_cc',
  'public_slug',
  'address_id',
  'position',
] as const satisfies readonly (keyof LocationWrite & keyof NewLocation)[];

const LOCATION_COLUMNS = [
  ...KEY_COLUMNS,
  ...LOCATION_CONTENT_FIELDS,
  'content_hash',
  'source_fingerprint',
  'last_run_id',
] as const satisfies readonly (keyof LocationsTable)[];
type LocationColumn = (typeof LOCATION_COLUMNS)[number];

/** Columns whose values are not text, with their type in the batch document and their cast on update. */
const LOCATION_TYPES: Partial<Record<LocationColumn, { record: string; cast?: string }>> = {
  id: { record: 'bigint' },
  org_id: { record: 'bigint' },
  address_id: { record: 'bigint' },
  position: { record: 'int' },
  phones: { record: 'json', cast: 'jsonb' },
  hours: { record: 'json', cast: 'jsonb' },
  links: { record: 'json', cast: 'jsonb' },
  year_established: { record: 'int' },
  latitude: { record: 'float8' },
  longitude: { record: 'float8' },
  categories: { record: 'text', cast: 'text[]' },
  labels: { record: 'text', cast: 'text[]' },
  last_run_id: { record: 'bigint' },
};

/**
 * What an update sets from the batch document. A Location's id, org, code and domain_cc never change
 * (a move is moveLocations), nor does its position; last_run_id is the run, a parameter.
 */
const LOCATION_UPDATED = LOCATION_COLUMNS.filter(
  (c) => !['id', 'org_id', 'code', 'domain_cc', 'position', 'last_run_id'].includes(c),
);

const LOCATION_RECORD = sql.raw(
  `v(${LOCATION_COLUMNS.filter((c) => c !== 'last_run_id')
    .map((c) => `${c} ${LOCATION_TYPES[c]?.record ?? 'text'}`)
    .join(', ')}, bump boolean)`,
);

/** The nested parts travel as the text encodeLocation made (once, for the hash too): JSON, or a text[] literal. */
type LocationValue = string | number | boolean | null;
const ENCODED: ReadonlySet<string> = new Set<keyof EncodedLocation>([
  'phones',
  'hours',
  'links',
  'categories',
  'labels',
]);

/** Per content field: whether it travels as encodeLocation's text (else as the merged value). */
const FROM_ENCODED = LOCATION_CONTENT_FIELDS.map((f) => ENCODED.has(f));

/** A Location row's values in LOCATION_COLUMNS order (the typed row COPY lines and the JSON document are built from). */
function locationValues(r: LocationWrite, runId: number): LocationValue[] {
  const c = r.content as unknown as Record<LocationContentField, LocationValue>;
  const e = r.encoded as unknown as Record<LocationContentField, LocationValue>;
  const out: LocationValue[] = KEY_COLUMNS.map((k) => r[k]);
  LOCATION_CONTENT_FIELDS.forEach((f, i) => {
    out.push(FROM_ENCODED[i] ? e[f] : c[f]);
  });
  out.push(r.hash, r.fingerprint, runId);
  return out;
}

const RAW_JSON = new Set(
  LOCATION_COLUMNS.flatMap((c, i) => (LOCATION_TYPES[c]?.record === 'json' ? [i] : [])),
);
const KEYS = LOCATION_COLUMNS.map((c) => `"${c}":`);
const LAST_RUN = LOCATION_COLUMNS.indexOf('last_run_id');

/**
 * The batch document, written out by hand: phones, hours and links are already JSON text (encoded
 * once for the hash, see encodeLocation), so they are spliced in as they are instead of being parsed
 * back or escaped a second time as strings.
 */
function locationJson(rows: readonly LocationWrite[]): string {
  const parts: string[] = [];
  for (const r of rows) {
    const values = locationValues(r, 0);
    let out = '{';
    for (let i = 0; i < values.length; i++) {
      if (i === LAST_RUN) continue;
      out += `${KEYS[i]}${RAW_JSON.has(i) ? values[i] : JSON.stringify(values[i])},`;
    }
    parts.push(`${out}"bump":${r.bump}}`);
  }
  return `[${parts.join(',')}]`;
}

/** New Locations, through COPY (pg-copy.ts); phones, hours and links go as the JSON text encoded once. */
export async function insertLocations(trx: Trx, rows: readonly NewLocation[], runId: number): Promise<void> {
  const lines = rows.map((r) => {
    let keys = '';
    for (const k of KEY_COLUMNS) keys += `${copyField(r[k])}\t`;
    return `${keys}${r.copy}\t${runId}\n`;
  });
  await copyInto(trx, 'locations', LOCATION_COLUMNS, asOneChunk(lines));
}

/**
 * The COPY text of a new Location's columns that do not depend on ids, slugs or the batch: its
 * content, hash and fingerprint (LOCATION_COLUMNS between the keys and last_run_id), and its
 * Address's columns after id and domain_cc. Built by the read-ahead for rows merged ahead, so that
 * most of each COPY line is made while Postgres works on the previous batch; insertLocations and
 * insertAddresses put the rest around it (the same text copyLine would make of the whole row).
 */
export interface NewLocationCopy {
  location: string;
  address: string;
}

export function newLocationCopy(
  m: {
    content: LocationContent;
    encoded: EncodedLocation;
    hash: string;
    address: AddressContent;
    addrHash: string;
  },
  fingerprint: string | null,
): NewLocationCopy {
  const c = m.content as unknown as Record<LocationContentField, LocationValue>;
  const e = m.encoded as unknown as Record<LocationContentField, LocationValue>;
  // Joined, not built by `+=`: a join makes one flat string, where `+=` makes a tree of a few dozen
  // pieces that V8 would flatten only when the batch joins its COPY lines (on the batch's critical
  // path, while Postgres waits), the pieces surviving in the heap until then.
  const location: string[] = [];
  for (let i = 0; i < LOCATION_CONTENT_FIELDS.length; i++) {
    const f = LOCATION_CONTENT_FIELDS[i]!;
    location.push(copyField(FROM_ENCODED[i] ? e[f] : c[f]));
  }
  location.push(copyField(m.hash), copyField(fingerprint));
  const a = m.address as unknown as Record<AddressField, string | null>;
  const address: string[] = [];
  for (const f of ADDRESS_FIELDS) address.push(copyField(a[f]!));
  address.push(copyField(m.addrHash));
  return { location: location.join('\t'), address: address.join('\t') };
}

/**
 * A changed (or reopened) Location: new content, open again, version + 1, `updated` now. Its id,
 * org, code and domain_cc never change; the public slug does only when its name parts did.
 */
export async function updateLocations(
  trx: Trx,
  rows: readonly LocationWrite[],
  runId: number,
): Promise<void> {
  if (rows.length === 0) return;
  const cast = (c: string) => {
    const t = LOCATION_TYPES[c as LocationColumn]?.cast;
    return t ? `::${t}` : '';
  };
  await sql`
    update locations l set ${setFromV(LOCATION_UPDATED, cast)}, closed_date = null,
      version_number = l.version_number + case when v.bump then 1 else 0 end, updated = now(),
      last_run_id = ${runId}::bigint
    from json_to_recordset(${locationJson(rows)}::json) as ${LOCATION_RECORD}
    where l.id = v.id`.execute(trx);
}

/**
 * Unchanged Locations met through a sheet row with another fingerprint (re-quoted, re-ordered
 * columns, a first import after an upgrade): only the fingerprint is stored, so the next import of
 * that row skips the merge. Not a change: no version bump, `updated` stays.
 */
export async function storeFingerprints(
  trx: Trx,
  rows: readonly { id: number; fingerprint: string }[],
): Promise<void> {
  if (rows.length === 0) return;
  await trx
    .updateTable('locations as l')
    .from(bulkRows('v', { id: 'bigint', fingerprint: 'text' }, rows))
    .set((eb) => ({ source_fingerprint: eb.ref('v.fingerprint') }))
    .whereRef('l.id', '=', 'v.id')
    .execute();
}

/**
 * Moves Locations to another Org (a sheet that named its Org by business name now names it by domain,
 * company number or `--org`): same id and stable domain, a version bump (once per run), and no longer
 * a default (the run settles both Orgs' defaults).
 */
export async function moveLocations(
  trx: Trx,
  moves: readonly { id: number; orgId: number }[],
  runId: number,
): Promise<void> {
  if (moves.length === 0) return;
  await trx
    .updateTable('locations as l')
    .from(bulkRows('v', { id: 'bigint', orgId: 'bigint' }, moves))
    .set((eb) => ({
      org_id: eb.ref('v.orgId'),
      is_default: false,
      version_number: sql<number>`l.version_number + (case when l.last_run_id = ${runId}::bigint then 0 else 1 end)`,
      updated: sql<Date>`now()`,
      last_run_id: runId,
    }))
    .whereRef('l.id', '=', 'v.id')
    .execute();
}
