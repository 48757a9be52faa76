import { sql, type Transaction } from 'kysely';
import type { Database } from '../../shared/database.js';
import type { Db } from '../../shared/db.js';
import { slugify } from '../../shared/domains.js';
import { copyInto, copyLine } from '../../shared/pg-copy.js';
import type { BatchRow } from '../feed-handler.js';
import type { RegistrarRecord } from './registrar.normalize.js';

/**
 * A register run's staging table: every accepted row of every part, as normalized, with where it
 * came from (part, line). Parts fill it in parallel through COPY; once every part is read, the merge
 * takes one row per company number from it, the last one (highest part, then highest line), so the
 * result does not depend on batch sizes, restarts or which worker read which part first.
 *
 * One table per run (`import_stage_<run id>`), unlogged: no WAL for rows that live minutes, and it is
 * dropped when the run ends. A server crash empties it while the parts' checkpoints survive; the
 * row count per part, checked on resume, notices that and the part is read again.
 */
export const stageTableOf = (runId: number) => `import_stage_${Math.trunc(runId)}`;
const table = (runId: number) => sql.table(stageTableOf(runId));

const COLUMNS = [
  'part_no',
  'line',
  'number',
  'name',
  'informal_name',
  'sic_code',
  'registration_date',
  'company_status',
  'company_category',
  'line1',
  'line2',
  'line3',
  'city',
  'state',
  'zip',
  'country_code',
  'address_hash',
  'org_hash',
  'slug',
  'fingerprint',
] as const;

/** name ... address_hash of a recognised row. */
const NO_PAYLOAD = Array.from({ length: 14 }, () => null);

export interface StagedRow {
  part_no: number;
  line: number;
  record: RegistrarRecord;
}

export async function createStage(db: Db, runId: number): Promise<void> {
  await sql`
    create unlogged table if not exists ${table(runId)} (
      part_no integer not null, line bigint not null, number text not null,
      -- name ... address_hash and slug are null for a row recognised unchanged (registrar.recognize.ts)
      name text, informal_name text, sic_code text, registration_date date,
      company_status text, company_category text,
      line1 text, line2 text, line3 text, city text, state text, zip text, country_code text,
      address_hash text, org_hash text not null,
      -- slugify(name), worked out while the parts are read (in parallel) rather than in the merge
      slug text,
      fingerprint text
    ) with (autovacuum_enabled = false)`.execute(db);
}

export async function stageExists(db: Db | Transaction<Database>, runId: number): Promise<boolean> {
  const { rows } = await sql<{
    ok: boolean;
  }>`select to_regclass(${stageTableOf(runId)}) is not null as ok`.execute(db);
  return rows[0]?.ok === true;
}

/** Rows a part has staged (to check, on resume, that a crash did not empty the table). */
export async function stagedRowsOf(db: Db, runId: number, partNo: number): Promise<number> {
  if (!(await stageExists(db, runId))) return 0;
  const { rows } = await sql<{ n: string }>`
    select count(*) as n from ${table(runId)} where part_no = ${partNo}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

export async function deleteStagedPart(trx: Transaction<Database>, runId: number, partNo: number) {
  await sql`delete from ${table(runId)} where part_no = ${partNo}`.execute(trx);
}

export async function stageRows(
  trx: Transaction<Database>,
  runId: number,
  partNo: number,
  rows: readonly BatchRow<RegistrarRecord>[],
): Promise<void> {
  const lines = rows.map(({ line, record: r }) =>
    r.known
      ? copyLine([partNo, line, r.number, ...NO_PAYLOAD, r.orgHash, null, r.fingerprint ?? null])
      : copyLine([
          partNo,
          line,
          r.number,
          r.name,
          r.informal_name,
          r.sic_code,
          r.registration_date,
          r.company_status,
          r.company_category,
          r.address.line1,
          r.address.line2,
          r.address.line3,
          r.address.city,
          r.address.state,
          r.address.zip,
          r.address.country_code,
          r.addressHash,
          r.orgHash,
          slugify(r.name),
          r.fingerprint ?? null,
        ]),
  );
  await copyInto(trx, stageTableOf(runId), COLUMNS, lines);
}

/** The merge's order: by company number, the last row (part, then line) first. Built once, after all parts. */
export async function indexStage(db: Db, runId: number): Promise<void> {
  await sql`
    create index if not exists ${sql.id(`${stageTableOf(runId)}_key`)}
    on ${table(runId)} (number, part_no desc, line desc)`.execute(db);
  // Autovacuum never looks at this table: without statistics the planner may sort the whole table for
  // every chunk instead of walking the index.
  await sql`analyze ${table(runId)}`.execute(db);
}

export interface Winner {
  /** Where the winning row is in the staging table (its ctid), to read it back without a join. */
  at: string;
  number: string;
  part_no: number;
  line: number;
  org_id: number | null;
  /** The Org exists, is on the register, has its address and the same content hash: nothing to write. */
  same: boolean;
  /** The name's slug base, for a company without an Org (null otherwise). */
  slug: string | null;
  /** Unchanged, but the Org does not hold this row's fingerprint yet (it is written, nothing else). */
  refresh: boolean;
}

/**
 * The next `limit` company numbers after `after`, each with its winning row's place, whether its
 * Org exists and whether it is unchanged. Only these few columns travel: an unchanged row is counted,
 * never read into JavaScript.
 */
export async function nextWinners(
  trx: Transaction<Database>,
  runId: number,
  country: string,
  after: string,
  limit: number,
): Promise<Winner[]> {
  const { rows } = await sql<Winner>`
    with w as (
      select distinct on (number) ctid as at, number, part_no, line, org_hash, slug, fingerprint
      from ${table(runId)}
      where number > ${after} order by number, part_no desc, line desc limit ${limit})
    select w.at::text as at, w.number, w.part_no, w.line, o.id as org_id,
      coalesce(o.content_hash = w.org_hash and o.left_register_on is null
               and o.registered_address_id is not null, false) as same,
      case when o.id is null then w.slug end as slug,
      coalesce(o.source_fingerprint is distinct from w.fingerprint, false) as refresh
    -- The lower bound keeps a merge join from walking the register's index from its start for every
    -- chunk (quadratic in the register's size); it starts where the chunk starts.
    from w left join orgs o on o.registration_country = ${country} and o.registration_number = w.number
      and o.registration_number > ${after}
    order by w.number`.execute(trx);
  return rows.map((r) => ({
    ...r,
    org_id: r.org_id === null ? null : Number(r.org_id),
    line: Number(r.line),
  }));
}

/** The full staged rows of the given winners. */
export async function stagedRecords(
  trx: Transaction<Database>,
  runId: number,
  winners: readonly Winner[],
): Promise<StagedRow[]> {
  if (winners.length === 0) return [];
  // By ctid: a TID scan, whatever the planner thinks of the table (nothing moves rows while it is read).
  if (winners.length === 0) return [];
  const { rows } = await sql<Record<(typeof COLUMNS)[number], string | null>>`
    select * from ${table(runId)} where ctid = any(${winners.map((w) => w.at)}::tid[])`.execute(trx);
  return rows.map((r) => ({
    part_no: Number(r.part_no),
    line: Number(r.line),
    record: {
      number: r.number!,
      name: r.name!,
      informal_name: r.informal_name!,
      // `date` comes back as its text (shared/db.ts type parsers).
      registration_date: r.registration_date,
      sic_code: r.sic_code,
      company_status: r.company_status,
      company_category: r.company_category,
      address: {
        line1: r.line1,
        line2: r.line2,
        line3: r.line3,
        city: r.city,
        state: r.state,
        zip: r.zip,
        country_code: r.country_code,
      },
      addressHash: r.address_hash!,
      orgHash: r.org_hash!,
      fingerprint: r.fingerprint,
      ...(r.name === null ? { known: true as const } : {}),
    },
  }));
}

export async function dropStage(trx: Transaction<Database> | Db, runId: number): Promise<void> {
  await sql`drop table if exists ${table(runId)}`.execute(trx);
}

/** Unchanged Orgs take the fingerprint of the row that found them unchanged (no version, no index). */
export async function refreshFingerprints(
  trx: Transaction<Database>,
  runId: number,
  country: string,
  winners: readonly Winner[],
): Promise<void> {
  if (winners.length === 0) return;
  await sql`
    update orgs o set source_fingerprint = s.fingerprint
    from ${table(runId)} s
    where s.ctid = any(${winners.map((w) => w.at)}::tid[])
      and o.registration_country = ${country} and o.registration_number = s.number`.execute(trx);
}
