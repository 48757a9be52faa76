import { sql, type Transaction } from 'kysely';
import type { Db } from '../../shared/db.js';
import { copyField, copyInto } from '../../shared/pg-copy.js';
import type { Database } from '../../shared/tables.js';
import type { BatchRow } from '../feed-handler.js';
import type { RegistrarRecord } from './registrar.normalize.js';
import { type StagedLine, stageLineOf } from './registrar.prepare.js';
import { registerWritesSql } from './registrar.recognize.js';

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
/**
 * The public labels handed out to the run's companies, by company number (registrar.labels.ts,
 * registrar.labels.repository.ts, which owns it); the merge reads a chunk's from it.
 */
export const labelsTableOf = (runId: number) => `${stageTableOf(runId)}_labels`;
const labelsTable = (runId: number) => sql.table(labelsTableOf(runId));
/** The run's companies waiting for a label, in their turn (registrar.labels.repository.ts). */
export const turnsTableOf = (runId: number) => `${stageTableOf(runId)}_turns`;

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
  'seen',
] as const;

/** name ... address_hash of a recognised row, in COPY text (14 nulls). */
const NO_PAYLOAD = Array.from({ length: 14 }, () => '\\N').join('\t');
/** A value of a recognised row that may be null, in COPY text. */
const orNull = (v: string | null | undefined) => v ?? '\\N';

export interface StagedRow {
  part_no: number;
  line: number;
  record: RegistrarRecord;
}

export async function createStage(db: Db, runId: number): Promise<void> {
  if (await stageExists(db, runId)) {
    // A stage made by the release before `seen` (a run in flight across an upgrade) gets the column.
    const { rows } = await sql<{ ok: boolean }>`
      select exists (select 1 from pg_attribute where attrelid = to_regclass(${stageTableOf(runId)})
        and attname = 'seen' and not attisdropped) as ok`.execute(db);
    if (rows[0]?.ok !== true)
      await sql`alter table ${table(runId)} add column if not exists seen bigint`.execute(db);
    return;
  }
  // Parts starting at once on several workers: `create table if not exists` is not safe against a
  // concurrent create of the same name (it fails on pg_type's unique index, seen in bench:import's
  // 2-worker run, and the part job had to be retried), so the creators take turns.
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`bizdir:stage:${stageTableOf(runId)}`}))`.execute(trx);
    await createStageTable(trx, runId);
  });
}

async function createStageTable(trx: Transaction<Database>, runId: number): Promise<void> {
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
      fingerprint text,
      -- of a recognised row: the register's write count when its Org was read (registerWritesSql)
      seen bigint
    ) with (autovacuum_enabled = false)`.execute(trx);
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

/** Rows every part has staged, by part number (one scan of the stage). */
export async function stagedRowsByPart(db: Db, runId: number): Promise<Map<number, number>> {
  if (!(await stageExists(db, runId))) return new Map();
  const { rows } = await sql<{ part_no: number; n: string }>`
    select part_no, count(*) as n from ${table(runId)} group by part_no`.execute(db);
  return new Map(rows.map((r) => [Number(r.part_no), Number(r.n)]));
}

export async function deleteStagedPart(trx: Transaction<Database>, runId: number, partNo: number) {
  await sql`delete from ${table(runId)} where part_no = ${partNo}`.execute(trx);
}

export async function stageRows(
  trx: Transaction<Database>,
  runId: number,
  partNo: number,
  rows: readonly BatchRow<RegistrarRecord | StagedLine>[],
): Promise<void> {
  const lines = rows.map(({ line, record: r }) =>
    'stageLine' in r
      ? r.stageLine
      : r.known
        ? // Written out (most rows of a re-import are these): a normalized company number, a
          // fingerprint and a count hold nothing COPY would escape (the stored hash is escaped anyway).
          `${partNo}\t${line}\t${r.number}\t${NO_PAYLOAD}\t${copyField(r.orgHash)}\t\\N\t${orNull(r.fingerprint)}\t${orNull(r.seen)}\n`
        : stageLineOf(partNo, line, r),
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
  // Only the merge's key columns: statistics for all twenty text columns took 0.4-1.1 s per 200,000
  // staged rows, and no merge query filters on the others. VACUUM as well: it marks the pages
  // all-visible, so the chunks' bounds come from an index-only scan of the key (no heap fetch per
  // staged row: 254 -> 80 ms of the bounds' 370 ms at 200,000 rows, load 11, for 147 ms of vacuum and
  // analyze against 212 ms of analyze alone).
  await sql`vacuum (analyze) ${table(runId)} (number, part_no, line)`.execute(db);
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
  /** The label reserved for this company by an earlier attempt at its chunk (null: none yet). */
  label: string | null;
}

/**
 * Where the merge's chunks after `after` end: every `limit`-th distinct company number (one pass over
 * the stage's index).
 */
export async function stageChunkBounds(
  db: Db,
  runId: number,
  after: string,
  limit: number,
): Promise<string[]> {
  const { rows } = await sql<{ number: string }>`
    select number from (
      select number, row_number() over (order by number) as n
      from (select distinct number from ${table(runId)} where number > ${after}) d) x
    where n % ${Math.max(1, Math.trunc(limit))} = 0
    order by number`.execute(db);
  return rows.map((r) => r.number);
}

/**
 * The company numbers in (`after`, `upto`], each with its winning row's place, whether its
 * Org exists and whether it is unchanged. Only these few columns travel: an unchanged row is counted,
 * never read into JavaScript.
 */
export async function nextWinners(
  trx: Db | Transaction<Database>,
  runId: number,
  country: string,
  after: string,
  upto: string | null,
): Promise<Winner[]> {
  // `fresh`: a row recognised unchanged while its part was read, and no other run has written to the
  // register since (registerWritesSql; the caller holds the register's lock, so none can meanwhile):
  // its Org is still as recognised, so it is unchanged without probing the Org again.
  const { rows } = await sql<Winner>`
    with g as materialized (select ${registerWritesSql(country, runId)} as writes,
      -- Whether any Org of the register has a number in this chunk's range (one probe of the key): a
      -- first import's chunks have none, and their rows then skip the probe below. The first number in
      -- key order, not EXISTS: EXISTS drops ORDER BY and LIMIT, and with a range holding many Orgs a
      -- sequential scan "to the first match" could walk most of the table (its heap is in number order).
      (select registration_number from orgs where registration_country = ${country}
        and registration_number > ${after} ${upto === null ? sql`` : sql`and registration_number <= ${upto}`}
        order by registration_country, registration_number limit 1) is not null as known),
    w as (
      select s.*, coalesce(s.seen = g.writes, false) as fresh, g.known from (
        select distinct on (number) ctid as at, number, part_no, line, org_hash, slug, fingerprint, seen
        from ${table(runId)}
        where number > ${after} ${upto === null ? sql`` : sql`and number <= ${upto}`}
        order by number, part_no desc, line desc) s cross join g)
    select w.at::text as at, w.number, w.part_no, w.line, o.id as org_id,
      w.fresh or coalesce(o.content_hash = w.org_hash and o.left_register_on is null
               and o.registered_address_id is not null, false) as same,
      case when o.id is null and not w.fresh then w.slug end as slug,
      not w.fresh and coalesce(o.source_fingerprint is distinct from w.fingerprint, false) as refresh,
      case when o.id is null and not w.fresh then k.label end as label
    -- One index probe per number (lateral): a join was planned as a hash join over a sequential scan
    -- of the register's Orgs for every chunk (70 ms a chunk at 200,000 Orgs, quadratic in its size).
    -- LIMIT 1 (the key is unique) keeps the planner from flattening it back into that join. None for
    -- a fresh row (the condition on w.fresh is checked once per row, before the probe).
    from w left join lateral (
      select id, content_hash, left_register_on, registered_address_id, source_fingerprint from orgs
      where not w.fresh and w.known and registration_country = ${country} and registration_number = w.number
      limit 1) o on true
    -- The labels kept by an earlier attempt at this chunk: one range scan of the chunk's numbers (none
    -- on a first attempt) rather than a probe per new company (5,000 probes, 10-60 ms a chunk).
    left join (select l.number, l.label from ${labelsTable(runId)} l
      where l.number > ${after} ${upto === null ? sql`` : sql`and l.number <= ${upto}`}) k on k.number = w.number
    order by w.number`.execute(trx);
  return rows.map((r) => ({
    ...r,
    org_id: r.org_id === null ? null : Number(r.org_id),
    line: Number(r.line),
  }));
}

/**
 * `unnest(ctids) join lateral (stage row by ctid) s`: one TID scan per row, nothing moves rows while the
 * stage is merged. `ctid = any(...)` over the whole list was planned as a sequential scan of the stage
 * for every chunk (30-50 ms a chunk at 200,000 staged rows, quadratic in the run's size).
 */
export const byCtid = (runId: number, winners: readonly Pick<Winner, 'at'>[]) =>
  sql`unnest(${winners.map((w) => w.at)}::tid[]) as t(at)
    cross join lateral (select * from ${table(runId)} where ctid = t.at) s`;

/** The full staged rows of the given winners. */
export async function stagedRecords(
  trx: Transaction<Database>,
  runId: number,
  winners: readonly Winner[],
): Promise<StagedRow[]> {
  if (winners.length === 0) return [];
  const { rows } = await sql<Record<(typeof COLUMNS)[number], string | null>>`
    select s.* from ${byCtid(runId, winners)}`.execute(trx);
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
  await sql`drop table if exists ${labelsTable(runId)}`.execute(trx);
  await sql`drop table if exists ${sql.table(turnsTableOf(runId))}`.execute(trx);
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
    from ${byCtid(runId, winners)}
    where o.registration_country = ${country} and o.registration_number = s.number`.execute(trx);
}
