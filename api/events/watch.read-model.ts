import { sql } from 'kysely';
import type { Db } from '../../shared/db.js';
import { parseDomain } from '../../shared/domains.js';
import { badRequest } from '../../shared/errors.js';
import { type OrgDomainRef, orgDomainKey, orgsWithDomains } from '../../shared/org-domains.read-model.js';

/** Orgs one request may watch (`watch=`): the read filters on their ids. */
export const MAX_WATCH = 100;

/**
 * A company number as the register writes it: upper case, spaces dropped, digits left-padded to 8
 * after a two-letter prefix (the rule of ingest/registrar/registrar.normalize.ts, normalizeCompanyNumber;
 * test/events.api.test.ts holds the two to the same answers).
 */
export function companyNumberOf(value: string): string | null {
  const v = value.replace(/\s+/g, '').toUpperCase();
  if (v === '') return null;
  const prefixed = /^([A-Z]{2})(\d{1,5})$/.exec(v);
  const padded = prefixed ? prefixed[1]! + prefixed[2]!.padStart(6, '0') : v.padStart(8, '0');
  return /^[A-Z0-9]{8}$/.test(padded) ? padded : null;
}

/**
 * The Orgs a watch list names: Org domains (stable or public, former public ones included) and
 * company numbers (of any register imported). An item that is neither, or names no Org, is a 400
 * naming it: a typo must not leave a consumer watching nothing.
 */
export async function resolveWatch(db: Db, items: readonly string[], suffix: string): Promise<number[]> {
  if (items.length > MAX_WATCH) throw badRequest(`watch: at most ${MAX_WATCH} Orgs per request`);
  const domains = new Map<string, { item: string; ref: OrgDomainRef }>();
  const numbers = new Map<string, string>();
  for (const item of items) {
    if (item.includes('.')) {
      const ref = parseDomain(item, suffix);
      if (ref?.kind !== 'org' && ref?.kind !== 'org-public')
        throw badRequest(`watch: "${item.slice(0, 80)}" is not an Org domain ending in .${suffix}`);
      domains.set(orgDomainKey(ref), { item, ref });
    } else {
      const number = companyNumberOf(item);
      if (number === null)
        throw badRequest(`watch: "${item.slice(0, 80)}" is not a company number or an Org domain`);
      numbers.set(number, item);
    }
  }
  const ids = new Set<number>();
  const found = new Set<string>();
  const add = (key: string, id: number) => {
    found.add(key);
    ids.add(Number(id));
  };
  if (domains.size > 0) {
    const rows = await db
      .selectFrom(orgsWithDomains([...domains.values()].map((d) => d.ref)).as('d'))
      .select(['d.org_id', 'd.key'])
      .execute();
    for (const r of rows) add(`d:${r.key}`, r.org_id);
  }
  if (numbers.size > 0) {
    // The registers present (a few, found by skipping through the registration index), then one
    // probe of that index per (register, number).
    const { rows } = await sql<{ id: number; number: string }>`
      with recursive c(cc) as (
        select min(registration_country) from orgs where registration_number is not null
        union all
        select (select min(registration_country) from orgs
          where registration_number is not null and registration_country > c.cc)
        from c where c.cc is not null
      )
      select o.id, k.number from unnest(${[...numbers.keys()]}::text[]) as k(number)
      cross join c
      cross join lateral (select id from orgs where registration_country = c.cc
        and registration_number = k.number limit 1) o
      where c.cc is not null`.execute(db);
    for (const r of rows) add(`n:${r.number}`, r.id);
  }
  for (const [key, { item }] of domains)
    if (!found.has(`d:${key}`)) throw badRequest(`watch: no Org has the domain "${item.slice(0, 80)}"`);
  for (const [number, item] of numbers)
    if (!found.has(`n:${number}`))
      throw badRequest(`watch: no Org has the company number "${item.slice(0, 20)}"`);
  return [...ids];
}
