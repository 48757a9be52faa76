import { createHash } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import { parseDomain, slugify } from '../../shared/domains.js';
import { type OrgDomainRef, orgDomainKey, orgsWithDomains } from '../../shared/org-domains.read-model.js';
import type { Database } from '../../shared/tables.js';
import { allocateSlugs } from '../public-domains.js';
import type { LocationField } from './locations.headers.js';
import type { OrgRef } from './locations.normalize.js';

/**
 * Which Org a location row belongs to (docs/decisions.md, Records from the feeds): its `Org domain` or `Company number` cell,
 * else the import's `--org`, else a non-registered Org found or created by business name and
 * country. Resolved set-wise per batch and cached for the run, since a sheet names few Orgs.
 */

export interface OrgInfo {
  id: number;
  name: string;
  informal_name: string | null;
  domain_cc: string;
}

/**
 * A failed lookup names the column at fault (null: none); `byName` when the row names its Org by
 * business name and country and no such Org exists (the resolver was not allowed to create it).
 */
export type OrgLookup =
  | { ok: true; org: OrgInfo }
  | { ok: false; field: LocationField | null; reason: string; byName?: true };

/** A row of a partial sheet without Org cells, `--org`, or the business name and country to find its Org by. */
const NO_ORG = 'names no Org: no Org domain or Company number, and no Business name and Country / Region';

/** Upper case, spaces dropped, left-padded to the register's 8 characters (`SC12345` -> `SC012345`). */
export function companyNumberOf(value: string): string | null {
  const v = value.replace(/\s+/g, '').toUpperCase();
  const prefixed = /^([A-Z]{2})(\d{1,5})$/.exec(v);
  const padded = prefixed ? prefixed[1]! + prefixed[2]!.padStart(6, '0') : v.padStart(8, '0');
  return v !== '' && /^[A-Z0-9]{8}$/.test(padded) ? padded : null;
}

const ORG_COLUMNS = sql`o.id, o.name, o.informal_name, o.domain_cc`;

type Keyed = OrgInfo & { key: string };

/** Orgs by stable or public domain (old labels too), keyed by orgDomainKey: one query for the batch. */
async function byDomain(trx: Transaction<Database>, domains: OrgDomainRef[]): Promise<Keyed[]> {
  return trx
    .selectFrom(orgsWithDomains(domains).as('d'))
    .innerJoin('orgs as o', 'o.id', 'd.org_id')
    .select(['o.id', 'o.name', 'o.informal_name', 'o.domain_cc', 'd.key'])
    .execute();
}

async function byNumber(trx: Transaction<Database>, country: string, numbers: string[]): Promise<Keyed[]> {
  const { rows } = await sql<Keyed>`
    select ${ORG_COLUMNS}, o.registration_number as key from orgs o
    where o.registration_country = ${country} and o.registration_number = any(${numbers}::text[])`.execute(
    trx,
  );
  return rows;
}

/**
 * Non-registered Orgs by country and name, case-insensitively; the oldest wins if a name was ever
 * entered twice. Both sides go through Postgres lower() so the match agrees with orgs_name_key.
 */
async function byName(trx: Transaction<Database>, wanted: NameKey[]): Promise<Keyed[]> {
  const { rows } = await sql<Keyed>`
    select distinct on (k.key) ${ORG_COLUMNS}, k.key
    from unnest(${wanted.map((w) => w.key)}::text[], ${wanted.map((w) => w.cc)}::text[], ${wanted.map((w) => w.name)}::text[])
      as k(key, cc, name)
    join orgs o on o.domain_cc = k.cc and lower(o.name) = lower(k.name)
    where o.registration_number is null
    order by k.key, o.id`.execute(trx);
  return rows;
}

interface NameKey {
  key: string;
  cc: string;
  name: string;
}

async function createByName(trx: Transaction<Database>, wanted: NameKey[]): Promise<Keyed[]> {
  const slugs = await allocateSlugs(
    trx,
    'org',
    wanted.map((w) => ({ base: slugify(w.name) })),
  );
  const hashes = wanted.map((w) =>
    createHash('md5')
      .update(JSON.stringify([w.name, w.name]))
      .digest('base64url'),
  );
  const { rows } = await sql<OrgInfo & { public_slug: string }>`
    insert into orgs (domain_cc, public_slug, name, informal_name, content_hash)
    select cc, slug, name, name, hash
    from unnest(${wanted.map((w) => w.cc)}::text[], ${slugs}::text[], ${wanted.map((w) => w.name)}::text[], ${hashes}::text[])
      as v(cc, slug, name, hash)
    returning id, name, informal_name, domain_cc, public_slug`.execute(trx);
  const keyBySlug = new Map(slugs.map((slug, i) => [slug, wanted[i]!.key]));
  return rows.map(({ public_slug, ...org }) => ({ ...org, key: keyBySlug.get(public_slug)! }));
}

export class OrgResolver {
  /** key -> Org, or the reason it names none. Name keys are never cached as missing (a later row creates). */
  private readonly cache = new Map<string, OrgInfo | string>();
  /** Ids of the Orgs created since takeCreated was last called. */
  private created: number[] = [];

  constructor(
    private readonly options: { domainSuffix: string; registrationCountry: string; fallback?: OrgInfo },
  ) {}

  private keyOf(
    ref: OrgRef,
  ):
    | { key: string; field?: 'orgDomain' | 'companyNumber'; domain?: OrgDomainRef }
    | { reason: string; field: 'orgDomain' | 'companyNumber' | null }
    | null {
    if (ref.orgDomain !== undefined) {
      const d = parseDomain(ref.orgDomain, this.options.domainSuffix);
      if (d?.kind === 'org' || d?.kind === 'org-public') {
        return { key: `d:${orgDomainKey(d)}`, field: 'orgDomain', domain: d };
      }
      return {
        field: 'orgDomain',
        reason: `"${ref.orgDomain}" is not an Org domain ending in .${this.options.domainSuffix}`,
      };
    }
    if (ref.companyNumber !== undefined) {
      const n = companyNumberOf(ref.companyNumber);
      if (n === null)
        return { field: 'companyNumber', reason: `"${ref.companyNumber}" is not a company number` };
      return { key: `n:${n}`, field: 'companyNumber' };
    }
    if (this.options.fallback) return null;
    if (ref.businessName === '' || ref.country === '') return { field: null, reason: NO_ORG };
    return { key: `o:${ref.country.toLowerCase()}:${ref.businessName.toLowerCase()}` };
  }

  /**
   * Resolves each ref; `create[i]` allows creating a missing by-name Org (only rows that will load
   * do, so a refused row never leaves an empty Org behind).
   */
  async resolve(
    trx: Transaction<Database>,
    refs: readonly OrgRef[],
    create: readonly boolean[],
  ): Promise<OrgLookup[]> {
    const keys = refs.map((r) => this.keyOf(r));
    const todo = new Set<string>();
    for (const k of keys) if (k && 'key' in k && !this.cache.has(k.key)) todo.add(k.key);
    if (todo.size > 0) await this.load(trx, [...todo], keys, refs, create);
    return keys.map((k, i): OrgLookup => {
      if (k === null) return { ok: true, org: this.options.fallback! };
      if ('reason' in k) return { ok: false, field: k.field, reason: k.reason };
      const hit = this.cache.get(k.key);
      if (hit !== undefined && typeof hit !== 'string') return { ok: true, org: hit };
      const ref = refs[i]!;
      const reason = hit ?? `no Org for "${ref.orgDomain ?? ref.companyNumber ?? ref.businessName}"`;
      return k.field === undefined
        ? { ok: false, field: null, reason, byName: true }
        : { ok: false, field: k.field, reason };
    });
  }

  /**
   * The non-registered Org each ref's business name and country would name (never created): where a
   * row's Location lived before its sheet named its Org by domain, company number or `--org`.
   */
  async byNameOnly(trx: Transaction<Database>, refs: readonly OrgRef[]): Promise<(OrgInfo | undefined)[]> {
    const keyOf = (ref: OrgRef) => `o:${ref.country.toLowerCase()}:${ref.businessName.toLowerCase()}`;
    const wanted = new Map<string, NameKey>();
    for (const ref of refs) {
      const key = keyOf(ref);
      if (!this.cache.has(key)) {
        wanted.set(key, { key: key.slice(2), cc: ref.country.toLowerCase(), name: ref.businessName });
      }
    }
    if (wanted.size > 0) {
      for (const { key, ...org } of await byName(trx, [...wanted.values()])) this.cache.set(`o:${key}`, org);
    }
    return refs.map((ref) => {
      const hit = this.cache.get(keyOf(ref));
      return hit !== undefined && typeof hit !== 'string' ? hit : undefined;
    });
  }

  private async load(
    trx: Transaction<Database>,
    todo: string[],
    keys: ReturnType<OrgResolver['keyOf']>[],
    refs: readonly OrgRef[],
    create: readonly boolean[],
  ): Promise<void> {
    const of = (prefix: string) => todo.filter((k) => k.startsWith(prefix)).map((k) => k.slice(2));
    const put = (prefix: string, rows: Keyed[]) => {
      for (const { key, ...org } of rows) this.cache.set(prefix + key, org);
    };
    const pending = new Set(todo);
    const domains = new Map<string, OrgDomainRef>();
    for (const k of keys)
      if (k && 'domain' in k && k.domain && pending.has(k.key)) domains.set(k.key, k.domain);
    if (domains.size > 0) put('d:', await byDomain(trx, [...domains.values()]));
    const numbers = of('n:');
    if (numbers.length > 0) put('n:', await byNumber(trx, this.options.registrationCountry, numbers));
    for (const k of domains.keys()) {
      if (!this.cache.has(k))
        this.cache.set(k, `no Org has the domain ${k.slice(2)}.${this.options.domainSuffix}`);
    }
    for (const k of numbers) {
      if (!this.cache.has(`n:${k}`)) {
        this.cache.set(`n:${k}`, `no registered Org has company number ${k} (import the register first)`);
      }
    }

    const names = new Map<string, NameKey>();
    keys.forEach((k, i) => {
      if (!k || !('key' in k) || !k.key.startsWith('o:') || this.cache.has(k.key)) return;
      const ref = refs[i]!;
      names.set(k.key, { key: k.key.slice(2), cc: ref.country.toLowerCase(), name: ref.businessName });
    });
    if (names.size === 0) return;
    // Serialise Org creation with other imports (the same lock allocateSlugs takes), so two runs
    // naming the same new business cannot both create it.
    await sql`select pg_advisory_xact_lock(hashtext('bizdir:slugs:org'))`.execute(trx);
    put('o:', await byName(trx, [...names.values()]));
    const wanted = new Map<string, NameKey>();
    keys.forEach((k, i) => {
      if (!k || !('key' in k) || !create[i] || this.cache.has(k.key) || wanted.has(k.key)) return;
      wanted.set(k.key, names.get(k.key)!);
    });
    if (wanted.size > 0) {
      const made = await createByName(trx, [...wanted.values()]);
      for (const org of made) this.created.push(org.id);
      put('o:', made);
    }
  }

  /** The Orgs this resolver created since the last call (in the caller's transaction, maybe not committed yet). */
  takeCreated(): number[] {
    const out = this.created;
    this.created = [];
    return out;
  }
}

/**
 * The `--org <domain|company-number>` option, resolved before any row is read: an unknown Org
 * fails the whole run (FeedFormatError) instead of refusing every row one by one.
 */
export async function resolveOrgOption(
  trx: Transaction<Database>,
  value: string,
  options: { domainSuffix: string; registrationCountry: string },
): Promise<OrgInfo | string> {
  const ref: OrgRef = value.includes('.')
    ? { orgDomain: value.trim(), businessName: '', country: '' }
    : { companyNumber: value.trim(), businessName: '', country: '' };
  const [found] = await new OrgResolver(options).resolve(trx, [ref], [false]);
  return found!.ok ? found!.org : `--org ${value}: ${found!.reason}`;
}
