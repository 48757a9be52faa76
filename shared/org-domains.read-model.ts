import { type Expression, type ExpressionBuilder, expressionBuilder, type SqlBool, sql } from 'kysely';
import type { DomainRef } from './domains.js';
import type { Database } from './tables.js';

/**
 * Which Org a domain names: the one rule, used by the API (single-Org reads), search (a query that
 * is a domain) and the locations feed (its `Org domain` cells).
 *
 * - stable `<uid>.<cc>.<suffix>`: the Org with that `uid` and that `domain_cc`;
 * - public `<slug>.<suffix>`: the Org whose `public_slug` it is now, or that held it before
 *   (`org_public_domains` keeps old labels resolving after a rename; a label is never handed to
 *   another Org, so a slug names at most one Org).
 *
 * The public case is a union of two index lookups, not `public_slug = $1 or id in (...)`: Postgres
 * can answer that OR only by scanning orgs, slow for a slug no Org has (docs/journal/2026-11-24.md,
 * 21:02).
 */
export type OrgDomainRef = Extract<DomainRef, { kind: 'org' | 'org-public' }>;

/**
 * The domain's labels without the suffix: `uid.cc` or `slug`. A slug is one label, so the two kinds
 * never share a key.
 */
export function orgDomainKey(ref: OrgDomainRef): string {
  return ref.kind === 'org' ? `${ref.uid}.${ref.cc}` : ref.slug;
}

// Subqueries only: callers embed them in queries of their own connection or transaction.
const qb = expressionBuilder<Database, never>();

/**
 * The stable uid of the row of `alias` (an Org or an Address), computed from its id: these tables
 * store none since migration 0023. Locations still store theirs (`locations.uid`).
 */
export const uidOf = (alias: string) => sql<string>`bizdir_uid(${sql.ref(`${alias}.id`)})`;

/** `= $1` for one value (a prepared statement's argument), `= any($1)` for a batch: one index probe each. */
type OneOrMany = string | readonly string[];
const matches = (column: string | Expression<string>, value: OneOrMany) => {
  const left = typeof column === 'string' ? sql.ref(column) : column;
  return typeof value === 'string'
    ? sql<SqlBool>`${left} = ${value}`
    : sql<SqlBool>`${left} = any(${value}::text[])`;
};

/**
 * "The row's stable id is `uid`" (an Org's or a Location's; values may be prepared-statement
 * arguments): the row is found by its primary key, because the uid is a permutation of the id and
 * `bizdir_uid_id` its inverse (migration 0020: `uid` has no index of its own); the uid is rechecked.
 */
export const hasUid = (table: 'orgs' | 'locations', uid: OneOrMany) => {
  const stored = table === 'orgs' ? uidOf('orgs') : sql.ref(`${table}.uid`);
  return typeof uid === 'string'
    ? sql<SqlBool>`${sql.ref(`${table}.id`)} = bizdir_uid_id(${uid}) and ${stored} = ${uid}`
    : sql<SqlBool>`${sql.ref(`${table}.id`)} = any(array(select bizdir_uid_id(u) from unnest(${uid}::text[]) as u)) and ${stored} = any(${uid}::text[])`;
};

/** The Orgs named by stable domain(s) `uid.cc`, as `(org_id, key)`; the uid finds the Org (see hasUid). */
function stableHolders(refs: readonly Extract<OrgDomainRef, { kind: 'org' }>[]) {
  const key = sql<string>`${uidOf('orgs')} || '.' || orgs.domain_cc`;
  return qb
    .selectFrom('orgs')
    .select(['orgs.id as org_id', key.as('key')])
    .where(
      hasUid(
        'orgs',
        refs.map((r) => r.uid),
      ),
    )
    .where(matches(key, refs.map(orgDomainKey)));
}

/** The Orgs whose current public label is `slug`, as `(org_id, key)`. */
const holdersNow = (slug: OneOrMany) =>
  qb
    .selectFrom('orgs')
    .select(['orgs.id as org_id', 'orgs.public_slug as key'])
    .where(matches('orgs.public_slug', slug));

/** The Orgs that held public label `slug` before a rename (former labels, migration 0022), as `(org_id, key)`. */
const holdersBefore = (slug: OneOrMany) =>
  qb
    .selectFrom('org_public_domains')
    .select(['org_public_domains.org_id', 'org_public_domains.slug as key'])
    .where(matches('org_public_domains.slug', slug));

/**
 * "This Org has domain `ref`", as a condition on `orgs` (values may be prepared-statement arguments):
 * the single-domain form of orgsWithDomains, for queries that read the Org itself.
 */
export function orgHasDomain(
  eb: ExpressionBuilder<Database, 'orgs'>,
  ref: OrgDomainRef,
): Expression<SqlBool> {
  if (ref.kind === 'org') return eb.and([hasUid('orgs', ref.uid), eb('orgs.domain_cc', '=', ref.cc)]);
  const holders = holdersNow(ref.slug).union(holdersBefore(ref.slug));
  return eb('orgs.id', 'in', qb.selectFrom(holders.as('h')).select('h.org_id'));
}

/**
 * The batch form: every Org any of `refs` names, as rows `(org_id, key)` with key = orgDomainKey of
 * the domain that named it (an Org named by several refs has a row for each). A subquery: select
 * from it with `db.selectFrom(orgsWithDomains(refs).as('d'))`.
 */
export function orgsWithDomains(refs: readonly OrgDomainRef[]) {
  if (refs.length === 0) throw new RangeError('orgsWithDomains: no domains');
  const stable = refs.flatMap((r) => (r.kind === 'org' ? [r] : []));
  const slugs = refs.flatMap((r) => (r.kind === 'org-public' ? [r.slug] : []));
  // Only the branches with values: a branch matching `= any('{}')` may still be planned as a scan.
  if (slugs.length === 0) return stableHolders(stable);
  const holders = stable.length === 0 ? holdersNow(slugs) : stableHolders(stable).union(holdersNow(slugs));
  return holders.union(holdersBefore(slugs));
}
