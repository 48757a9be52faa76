import { sql, type Transaction } from 'kysely';
import type { Database } from '../../shared/database.js';
import { copyInto, copyLine } from '../../shared/pg-copy.js';
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

/**
 * Changed rows (updates) travel as one JSON document read by json_to_recordset (new rows go through
 * COPY, below): one native JSON.stringify here
 * and one parse in Postgres, instead of a dozen array parameters escaped element by element. Nested
 * values ride along as text and are cast per row (jsonb, text[]): measured, that is several times
 * cheaper than letting json_to_recordset build jsonb or arrays itself, or unnesting in subqueries.
 */
const ADDRESS_RECORD = sql`v(id bigint, domain_cc text, line1 text, line2 text, line3 text, city text,
  sublocality text, state text, state_code text, zip text, country_code text, hash text, bump boolean)`;

const addressJson = (rows: readonly (AddressWrite & { bump?: boolean })[]) =>
  JSON.stringify(
    rows.map((r) => ({ id: r.id, domain_cc: r.domain_cc, hash: r.hash, bump: r.bump ?? true, ...r.content })),
  );

const ADDRESS_COPY_COLUMNS = [
  'id',
  'domain_cc',
  'line1',
  'line2',
  'line3',
  'city',
  'sublocality',
  'state',
  'state_code',
  'zip',
  'country_code',
  'content_hash',
];

/** New Addresses, through COPY (pg-copy.ts): the ids were taken beforehand (takeIds). */
export async function insertAddresses(trx: Trx, rows: readonly AddressWrite[]): Promise<void> {
  const lines = rows.map(({ id, domain_cc, content: c, hash }) =>
    copyLine([
      id,
      domain_cc,
      c.line1,
      c.line2,
      c.line3,
      c.city,
      c.sublocality,
      c.state,
      c.state_code,
      c.zip,
      c.country_code,
      hash,
    ]),
  );
  await copyInto(trx, 'addresses', ADDRESS_COPY_COLUMNS, lines);
}

/** A changed Address: new content, `updated` now, version + 1 unless this run already bumped it. */
export async function updateAddresses(
  trx: Trx,
  rows: readonly (AddressWrite & { bump: boolean })[],
): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    update addresses a set line1 = v.line1, line2 = v.line2, line3 = v.line3, city = v.city,
      sublocality = v.sublocality, state = v.state, state_code = v.state_code, zip = v.zip,
      country_code = v.country_code, content_hash = v.hash,
      version_number = a.version_number + case when v.bump then 1 else 0 end, updated = now()
    from json_to_recordset(${addressJson(rows)}::json) as ${ADDRESS_RECORD}
    where a.id = v.id`.execute(trx);
}

export interface LocationWrite {
  id: number;
  org_id: number;
  code: string;
  domain_cc: string;
  public_slug: string;
  address_id: number;
  position: number;
  content: LocationContent;
  encoded: EncodedLocation;
  hash: string;
  /** See locations.source_fingerprint; null for a row that had warnings. */
  fingerprint: string | null;
  /** False when this run already bumped the Location (a store code repeated in the sheet). */
  bump: boolean;
}

const LOCATION_RECORD = sql`v(id bigint, org_id bigint, code text, domain_cc text, public_slug text,
  address_id bigint, position int, name text, description text, phones json, hours json, links json,
  year_established int, latitude float8, longitude float8, primary_category text, categories text,
  labels text, logo_url text, hash text, fingerprint text, bump boolean)`;

const str = JSON.stringify;

/**
 * The batch document, written out by hand: phones, hours and links are already JSON text (encoded
 * once for the hash, see encodeLocation), so they are spliced in as they are instead of being parsed
 * back or escaped a second time as strings.
 */
function locationJson(rows: readonly LocationWrite[]): string {
  const parts: string[] = [];
  for (const { content: c, encoded: e, ...r } of rows) {
    parts.push(
      `{"id":${r.id},"org_id":${r.org_id},"code":${str(r.code)},"domain_cc":${str(r.domain_cc)},` +
        `"public_slug":${str(r.public_slug)},"address_id":${r.address_id},"position":${r.position},` +
        `"name":${str(c.name)},"description":${str(c.description)},"phones":${e.phones},"hours":${e.hours},` +
        `"links":${e.links},"year_established":${str(c.year_established)},"latitude":${str(c.latitude)},` +
        `"longitude":${str(c.longitude)},"primary_category":${str(c.primary_category)},` +
        `"categories":${str(e.categories)},"labels":${str(e.labels)},"logo_url":${str(c.logo_url)},` +
        `"hash":${str(r.hash)},"fingerprint":${str(r.fingerprint)},"bump":${r.bump}}`,
    );
  }
  return `[${parts.join(',')}]`;
}

const LOCATION_COPY_COLUMNS = [
  'id',
  'org_id',
  'code',
  'domain_cc',
  'public_slug',
  'address_id',
  'position',
  'name',
  'description',
  'phones',
  'hours',
  'links',
  'year_established',
  'latitude',
  'longitude',
  'primary_category',
  'categories',
  'labels',
  'logo_url',
  'content_hash',
  'source_fingerprint',
  'last_run_id',
];

/** New Locations, through COPY (pg-copy.ts); phones, hours and links go as the JSON text encoded once. */
export async function insertLocations(
  trx: Trx,
  rows: readonly LocationWrite[],
  runId: number,
): Promise<void> {
  const lines = rows.map(({ content: c, encoded: e, ...r }) =>
    copyLine([
      r.id,
      r.org_id,
      r.code,
      r.domain_cc,
      r.public_slug,
      r.address_id,
      r.position,
      c.name,
      c.description,
      e.phones,
      e.hours,
      e.links,
      c.year_established,
      c.latitude,
      c.longitude,
      c.primary_category,
      e.categories,
      e.labels,
      c.logo_url,
      r.hash,
      r.fingerprint,
      runId,
    ]),
  );
  await copyInto(trx, 'locations', LOCATION_COPY_COLUMNS, lines);
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
  await sql`
    update locations l set public_slug = v.public_slug, address_id = v.address_id, name = v.name,
      description = v.description, phones = v.phones::jsonb, hours = v.hours::jsonb, links = v.links::jsonb,
      year_established = v.year_established, latitude = v.latitude, longitude = v.longitude,
      primary_category = v.primary_category, categories = v.categories::text[], labels = v.labels::text[],
      logo_url = v.logo_url, content_hash = v.hash, source_fingerprint = v.fingerprint, closed_date = null,
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
  await sql`
    update locations l set source_fingerprint = v.fingerprint
    from unnest(${rows.map((r) => r.id)}::bigint[], ${rows.map((r) => r.fingerprint)}::text[]) as v(id, fingerprint)
    where l.id = v.id`.execute(trx);
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
  await sql`
    update locations l set org_id = v.org_id, is_default = false,
      version_number = l.version_number + (case when l.last_run_id = ${runId}::bigint then 0 else 1 end),
      updated = now(), last_run_id = ${runId}::bigint
    from unnest(${moves.map((m) => m.id)}::bigint[], ${moves.map((m) => m.orgId)}::bigint[]) as v(id, org_id)
    where l.id = v.id`.execute(trx);
}
