import { sql, type Transaction } from 'kysely';
import type { Db } from '../../shared/db.js';
import { slugify } from '../../shared/domains.js';
import type { Database } from '../../shared/tables.js';
import { bulkRows } from '../bulk-rows.js';
import { MergeRaceError } from '../feed-handler.js';
import { keepFormerSlugs } from '../public-domains.js';
import { insertAddresses, nextAddressIds } from './registrar.addresses.js';
import { labelsFor } from './registrar.labels.js';
import { keptLabelsOf } from './registrar.labels.repository.js';
import type { RegistrarRecord } from './registrar.normalize.js';
import { stageTableOf, type Winner } from './registrar.stage.js';

/**
 * The register's writes to Orgs, set-based per chunk: the Orgs of a chunk's company numbers as
 * stored, new companies (with their registered addresses, in one statement) and changed Orgs
 * (renamed ones with their new public labels, the old ones kept as aliases).
 *
 * Versioning: an Org's hash covers its own fields and its address's hash (the Org shows its
 * registered address), so a changed address bumps the Address and its Org; an Org-only change bumps
 * only the Org; an unchanged row is not written at all.
 */
export interface Existing {
  id: number;
  number: string;
  name: string;
  content_hash: string;
  left_register_on: string | null;
  address_id: number | null;
  address_hash: string | null;
}

export interface Ctx {
  runId: number;
  country: string;
}

/** The database outside the chunk's transaction (for label reservations). */
export interface MergeCtx extends Ctx {
  db: Db;
}

/** Label races (see reserveSlugs): the chunk rolls back and is merged again with fresh labels. */
const LABEL_KEYS = new Set(['orgs_public_slug_key', 'org_public_domains_one_owner']);
function labelRace(error: unknown): never {
  const e = error as { code?: string; constraint?: string };
  if (e.code === '23505' && e.constraint !== undefined && LABEL_KEYS.has(e.constraint))
    throw new MergeRaceError(`a public label was taken by another import meanwhile (${e.constraint})`);
  throw error;
}

export async function findExisting(trx: Transaction<Database>, country: string, numbers: string[]) {
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

/**
 * New companies, straight from the staging table, with the labels reserved for them when the chunk was
 * planned: the rows themselves never travel to JavaScript and back.
 */
export async function insertOrgs(
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

export interface OrgChange {
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

export async function updateOrgs(trx: Transaction<Database>, changes: readonly OrgChange[], ctx: MergeCtx) {
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
