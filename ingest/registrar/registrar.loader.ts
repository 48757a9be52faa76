import { sql, type Transaction } from 'kysely';
import type { Db } from '../../shared/db.js';
import { slugify } from '../../shared/domains.js';
import type { AddressesTable, Database } from '../../shared/tables.js';
import { bulkRows, type PgArrayOf } from '../bulk-rows.js';
import { type ChunkPlan, type MergeOutcome, MergeRaceError, StaleStagedRowsError } from '../feed-handler.js';
import { checkGone, MIN_GUARDED_GONE } from '../full-guard.js';
import { keepFormerSlugs } from '../public-domains.js';
import { labelsFor } from './registrar.labels.js';
import { keptLabelsOf } from './registrar.labels.repository.js';
import type { RegistrarRecord } from './registrar.normalize.js';
import {
  nextWinners,
  refreshFingerprints,
  stagedRecords,
  stageTableOf,
  type Winner,
} from './registrar.stage.js';

/**
 * The one place that writes register records, from a run's staged rows (registrar.stage.ts), one
 * chunk of company numbers at a time. Set-based per chunk: one query finds what exists,
 * then one statement per kind of write (new companies with their addresses and public labels,
 * changed Orgs, changed addresses), so the cost per row is a few microseconds of SQL, not a round trip.
 *
 * Versioning: an Org's hash covers its own fields and its address's hash (the Org shows its
 * registered address), so a changed address bumps the Address and its Org; an Org-only change bumps
 * only the Org; an unchanged row is not written at all.
 */
interface Existing {
  id: number;
  number: string;
  name: string;
  content_hash: string;
  left_register_on: string | null;
  address_id: number | null;
  address_hash: string | null;
}

interface Ctx {
  runId: number;
  country: string;
}

/** The database outside the chunk's transaction (for label reservations). */
interface MergeCtx extends Ctx {
  db: Db;
}

/** A planned chunk: its winning rows and the labels of the new companies among them. */
export interface RegistrarChunkPlan extends ChunkPlan {
  winners: Winner[];
  /** The labels of the winners without an Org, in their order. */
  slugs: string[];
}

/** Label races (see reserveSlugs): the chunk rolls back and is merged again with fresh labels. */
const LABEL_KEYS = new Set(['orgs_public_slug_key', 'org_public_domains_one_owner']);
function labelRace(error: unknown): never {
  const e = error as { code?: string; constraint?: string };
  if (e.code === '23505' && e.constraint !== undefined && LABEL_KEYS.has(e.constraint))
    throw new MergeRaceError(`a public label was taken by another import meanwhile (${e.constraint})`);
  throw error;
}

async function findExisting(trx: Transaction<Database>, country: string, numbers: string[]) {
  if (numbers.length === 0) return new Map<string, Existing>();
  // One index probe per number (lateral): `= any()` and plain joins were both planned as sequential
  // scans of every Org for each chunk at a few hundred thousand Orgs. `limit 1` (the keys are unique)
  // keeps the planner from flattening the lateral subqueries back into such joins.
  const { rows } = await sql<Omit<Existing, 'address_hash'>>`
    select o.id, o.registration_number as number, o.name, o.content_hash, o.left_register_on,
           o.registered_address_id as address_id
    from unnest(${numbers}::text[]) as k(number)
    cross join lateral (select * from orgs where registration_country = ${country}
      and registration_number = k.number limit 1) o`.execute(trx);
  return new Map(rows.map((r) => [r.number, { ...r, address_hash: null } as Existing]));
}

async function addressHashes(trx: Transaction<Database>, ids: number[]): Promise<Map<number, string>> {
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
async function nextAddressIds(trx: Transaction<Database>, n: number): Promise<number[]> {
  const { rows } = await sql<{ id: number }>`
    select nextval(pg_get_serial_sequence('addresses', 'id')) as id from generate_series(1, ${n}::int)`.execute(
    trx,
  );
  return rows.map((r) => Number(r.id));
}

async function insertAddresses(
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

/**
 * New companies, straight from the staging table, with the labels reserved for them when the chunk was
 * planned: the rows themselves never travel to JavaScript and back.
 */
async function insertOrgs(
  trx: Transaction<Database>,
  rows: readonly Winner[],
  slugs: readonly string[],
  ctx: Ctx,
) {
  if (rows.length === 0) return [];
  const cc = ctx.country.toLowerCase();
  // One statement for the addresses and the Orgs (a new Org's label is its public_slug, nothing
  // more): a new company costs no extra round trip. The address ids are drawn in `v` (materialized
  // once) so each Org points at its own address. The labels were checked free when reserved, so they go in with a plain insert (no
  // ON CONFLICT); a label taken meanwhile fails the statement (a MergeRaceError, merged again).
  // Each winner's place in the stage and its label side by side (one unnest): joining the labels on
  // the company number was a hash join over the wide staged rows (about 50 ms a chunk).
  if (slugs.length !== rows.length)
    throw new Error(`${rows.length} new companies but ${slugs.length} labels`);
  const { rows: inserted } = await sql<{ id: number }>`
    with q as materialized (select pg_get_serial_sequence('addresses', 'id')::regclass as seq),
    v as materialized (
      select s.*, t.label, nextval(q.seq) as address_id
      from q cross join unnest(${rows.map((r) => r.at)}::tid[], ${slugs}::text[]) as t(at, label)
      cross join lateral (select * from ${sql.table(stageTableOf(ctx.runId))} where ctid = t.at) s
    ), a as (
      insert into addresses (id, domain_cc, line1, line2, line3, city, state, zip, country_code, content_hash)
      overriding system value
      select address_id, coalesce(lower(country_code), ${cc}), line1, line2, line3, city, state, zip,
        country_code, address_hash from v
    ), o as (
      insert into orgs (domain_cc, public_slug, name, informal_name, sic_code, registration_country,
        registration_number, registration_date, registered_address_id, company_status, company_category,
        content_hash, last_run_id, source_fingerprint)
      select ${cc}, label, name, informal_name, sic_code, ${ctx.country}, number, registration_date, address_id,
        company_status, company_category, org_hash, ${ctx.runId}::bigint, fingerprint
      from v
      returning id
    )
    select id from o`
    .execute(trx)
    .catch(labelRace);
  return inserted.map((o) => Number(o.id));
}

interface OrgChange {
  existing: Existing;
  record: RegistrarRecord;
  bump: boolean;
}

/** A changed company as one row of the bulk update of its Org. */
const ORG_CHANGE_ROW = {
  id: 'bigint',
  name: 'text',
  informal_name: 'text',
  sic_code: 'text',
  registration_date: 'date',
  company_status: 'text',
  company_category: 'text',
  content_hash: 'text',
  slug: 'text',
  address_id: 'bigint',
  bump: 'boolean',
  fingerprint: 'text',
} as const;

async function updateOrgs(trx: Transaction<Database>, changes: readonly OrgChange[], ctx: MergeCtx) {
  if (changes.length === 0) return;
  const renamed = changes.filter((c) => c.existing.name !== c.record.name);
  // Handed out before the merge (registrar.labels.ts); one reserved now is reserved outside this
  // transaction (the slug lock is never held while a chunk waits for the chunk before it to commit).
  const keptLabels = await keptLabelsOf(
    trx,
    ctx.runId,
    renamed.map((c) => c.record.number),
  );
  const newSlugs = await labelsFor(
    ctx.db,
    ctx.runId,
    renamed.map((c) => ({
      number: c.record.number,
      base: slugify(c.record.name),
      ownerId: c.existing.id,
      kept: keptLabels.get(c.record.number) ?? null,
    })),
  );
  const slugOf = new Map(renamed.map((c, i) => [c.existing.id, newSlugs[i]!]));
  // Orgs without a registered address yet (written by an older version) get one now.
  const homeless = changes.filter((c) => c.existing.address_id === null);
  const homeIds = await nextAddressIds(trx, homeless.length);
  await insertAddresses(trx, homeless, homeIds, ctx.country);
  const homeOf = new Map(homeless.map((c, i) => [c.existing.id, homeIds[i]!]));
  const rows = changes.map(({ existing, record: r, bump }) => ({
    id: existing.id,
    name: r.name,
    informal_name: r.informal_name,
    sic_code: r.sic_code,
    registration_date: r.registration_date,
    company_status: r.company_status,
    company_category: r.company_category,
    content_hash: r.orgHash,
    slug: slugOf.get(existing.id) ?? null,
    address_id: homeOf.get(existing.id) ?? null,
    bump,
    fingerprint: r.fingerprint ?? null,
  }));
  // A renamed Org's label so far stays its alias.
  await keepFormerSlugs(
    trx,
    'org',
    renamed.map((c) => ({ ownerId: c.existing.id, slug: slugOf.get(c.existing.id)! })),
  );
  const v = bulkRows('v', ORG_CHANGE_ROW, rows);
  await trx
    .updateTable('orgs as o')
    .from(v)
    .set((eb) => ({
      name: eb.ref('v.name'),
      informal_name: eb.ref('v.informal_name'),
      sic_code: eb.ref('v.sic_code'),
      registration_date: eb.ref('v.registration_date'),
      company_status: eb.ref('v.company_status'),
      company_category: eb.ref('v.company_category'),
      content_hash: eb.ref('v.content_hash'),
      public_slug: eb.fn.coalesce('v.slug', 'o.public_slug'),
      registered_address_id: eb.fn.coalesce('v.address_id', 'o.registered_address_id'),
      left_register_on: null,
      version_number: sql<number>`o.version_number + case when v.bump then 1 else 0 end`,
      updated: sql<Date>`now()`,
      last_run_id: ctx.runId,
      source_fingerprint: eb.ref('v.fingerprint'),
    }))
    .whereRef('o.id', '=', 'v.id')
    .execute()
    .catch(labelRace);
}

async function updateAddresses(trx: Transaction<Database>, changes: readonly OrgChange[]) {
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

/**
 * Plans the next chunk of a run's staged rows (registrar.stage.ts): one row per company number, the
 * last one of the run, with whether its Org exists and is unchanged, and the public label of each
 * new company (handed out before the merge, registrar.labels.ts). Outside the chunk's transaction: the staging table does not change while it is
 * merged, and no other writer touches this register's Orgs (the caller holds the register's lock).
 */
export async function planRegistrarChunk(
  db: Db,
  ctx: Ctx,
  after: string,
  upto: string | null,
): Promise<RegistrarChunkPlan | null> {
  const winners = await nextWinners(db, ctx.runId, ctx.country, after, upto);
  if (winners.length === 0) return null;
  const slugs = await labelsFor(
    db,
    ctx.runId,
    winners
      .filter((w) => !w.same && w.org_id === null)
      .map((w) => ({ number: w.number, base: w.slug ?? 'org', kept: w.label })),
  );
  return { last: winners.at(-1)!.number, winners, slugs };
}

/**
 * Merges a planned chunk into the Orgs. Each number is met once per run, so a changed Org is bumped
 * exactly once, and an unchanged one is never read into JavaScript (the stage query says so).
 */
export async function mergeRegistrarChunk(
  trx: Transaction<Database>,
  ctx: MergeCtx,
  plan: RegistrarChunkPlan,
): Promise<MergeOutcome> {
  const { winners } = plan;
  const byPart = new Map<number, { inserted: number; updated: number; unchanged: number }>();
  const tally = (partNo: number, k: 'inserted' | 'updated' | 'unchanged') => {
    const c = byPart.get(partNo) ?? { inserted: 0, updated: 0, unchanged: 0 };
    c[k]++;
    byPart.set(partNo, c);
  };
  const outcome: MergeOutcome = {
    inserted: 0,
    updated: 0,
    unchanged: 0,
    merged: winners.length,
    last: plan.last,
    changedOrgIds: [],
    byPart,
  };
  const todo = winners.filter((w) => {
    if (w.same) tally(w.part_no, 'unchanged');
    return !w.same;
  });
  outcome.unchanged = winners.length - todo.length;
  await refreshFingerprints(
    trx,
    ctx.runId,
    ctx.country,
    winners.filter((w) => w.same && w.refresh),
  );
  if (todo.length === 0) return outcome;
  const inserts = todo.filter((w) => w.org_id === null);
  for (const w of inserts) tally(w.part_no, 'inserted');
  // Changed companies are read back (they are compared field by field with what is stored).
  const staged = await stagedRecords(
    trx,
    ctx.runId,
    todo.filter((w) => w.org_id !== null),
  );
  const existing = await findExisting(
    trx,
    ctx.country,
    staged.map((s) => s.record.number),
  );
  const stale = [...existing.values()].filter((e) => e.address_id !== null);
  const hashes = await addressHashes(
    trx,
    stale.map((e) => e.address_id!),
  );
  for (const e of stale) e.address_hash = hashes.get(e.address_id!) ?? null;

  const orgChanges: OrgChange[] = [];
  const addressChanges: OrgChange[] = [];
  // Recognised unchanged while their part was read, changed since (another run of this register
  // merged in between): their fields were never read, so their parts must be read again.
  const outdated = staged.filter((r) => r.record.known);
  if (outdated.length > 0) throw new StaleStagedRowsError([...new Set(outdated.map((r) => r.part_no))]);
  for (const row of staged) {
    const rec = row.record;
    const found = existing.get(rec.number);
    // Gone since the stage query looked (not possible under the feed lock): nothing to compare with.
    if (!found) continue;
    const orgChanged = found.content_hash !== rec.orgHash || found.left_register_on !== null;
    const addressChanged = found.address_id !== null && found.address_hash !== rec.addressHash;
    if (!orgChanged && !addressChanged && found.address_id !== null) {
      tally(row.part_no, 'unchanged');
      outcome.unchanged++;
      continue;
    }
    const change = { existing: found, record: rec, bump: true };
    if (orgChanged || found.address_id === null) orgChanges.push(change);
    if (addressChanged) addressChanges.push(change);
    tally(row.part_no, 'updated');
    outcome.updated++;
  }
  const insertedIds = await insertOrgs(trx, inserts, plan.slugs, ctx);
  outcome.inserted = insertedIds.length;
  await updateOrgs(trx, orgChanges, ctx);
  await updateAddresses(trx, addressChanges);
  outcome.changedOrgIds = [...insertedIds, ...orgChanges.map((c) => c.existing.id)];
  return outcome;
}

/**
 * `--full`: every Org of the register country that no part of the run holds has left the register.
 * A part holds a company by an accepted row (staged) or by a rejected row whose company number could be
 * read (import_rejects.record_key, registrar.normalize.ts readableCompanyNumber): that row is in the
 * file, only not loadable, so its Org is left as it was, neither merged nor marked. Nothing is
 * deleted; an Org that comes back later is cleared by updateOrgs (its hash check sees
 * left_register_on set). Runs after every part has been read and merged, in the run's last transaction.
 * Marking more than `--max-gone` of the register fails the run and marks none (full-guard.ts).
 */
export async function closeMissingOrgs(trx: Transaction<Database>, ctx: Ctx, maxGonePercent?: number) {
  const { rows } = await sql<{ id: number }>`
    update orgs o set left_register_on = current_date, version_number = o.version_number + 1,
      updated = now(), last_run_id = ${ctx.runId}::bigint
    where o.registration_country = ${ctx.country} and o.registration_number is not null
      and o.left_register_on is null
      and not exists (select 1 from ${sql.table(stageTableOf(ctx.runId))} s where s.number = o.registration_number)
      -- The run's rejects (found by the run's index; a few, not a scan per Org).
      and not exists (select 1 from import_rejects r
        where r.run_id = ${ctx.runId}::bigint and r.record_key = o.registration_number)
    returning o.id`.execute(trx);
  const ids = rows.map((r) => Number(r.id));
  if (ids.length >= MIN_GUARDED_GONE) {
    // Marked and still open: the register's open companies before this step (full-guard.ts).
    const { rows: left } = await sql<{ n: string }>`
      select count(*) as n from orgs
      where registration_country = ${ctx.country} and registration_number is not null
        and left_register_on is null`.execute(trx);
    const open = ids.length + Number(left[0]?.n ?? 0);
    checkGone(ids.length, open, (n) => `of the register's ${n} open companies`, maxGonePercent);
  }
  return { closed: ids.length, changedOrgIds: ids };
}
