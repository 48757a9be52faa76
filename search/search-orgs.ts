import { sql } from 'kysely';
import type { Meilisearch } from 'meilisearch';
import type { Db } from '../shared/db.js';
import { parseDomain } from '../shared/domains.js';
import { type OrgSearchPage, type OrgSearchQuery, searchOrgIds } from './org-search.js';

/**
 * The search use case: exact-domain matches come from Postgres (stable ids, current and old public
 * labels, which the index does not hold), name matches and the order from Meilisearch.
 */
export interface SearchOrgsDeps {
  db: Db;
  meili: Meilisearch;
  indexUid: string;
  domainSuffix: string;
}

/** Ids of the Orgs (zero or one) whose stable or public domain, old labels included, equals q. */
export async function orgIdsForDomain(db: Db, q: string, suffix: string): Promise<number[]> {
  const ref = parseDomain(q, suffix);
  if (!ref) return [];
  if (ref.kind === 'org') {
    const rows = await db
      .selectFrom('orgs')
      .select('id')
      .where('uid', '=', ref.uid)
      .where('domain_cc', '=', ref.cc)
      .execute();
    return rows.map((r) => r.id);
  }
  if (ref.kind === 'org-public') {
    const rows = await sql<{ id: number }>`
      select id from orgs where public_slug = ${ref.slug}
      union select org_id from org_public_domains where slug = ${ref.slug}`.execute(db);
    return rows.rows.map((r) => Number(r.id));
  }
  return [];
}

export async function searchOrgs(
  deps: SearchOrgsDeps,
  query: Omit<OrgSearchQuery, 'domainOrgIds'>,
): Promise<OrgSearchPage> {
  const domainOrgIds = query.q === '' ? [] : await orgIdsForDomain(deps.db, query.q, deps.domainSuffix);
  return searchOrgIds(deps.meili, deps.indexUid, { ...query, domainOrgIds });
}
