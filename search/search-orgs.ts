import { sql } from 'kysely';
import { type Meilisearch, MeilisearchApiError } from 'meilisearch';
import type { Db } from '../shared/db.js';
import { bizdirUid, parseDomain } from '../shared/domains.js';
import { orgsWithDomains } from '../shared/org-domains.js';
import { answers, cmpKey, freshRows, type Key, mergePage, orderKey, pendingOrgIds } from './fresh-changes.js';
import { ORG_INDEX_FORMAT } from './index-definition.js';
import { searchV1OrgIds } from './legacy-v1/org-search.js';
import { type IndexFormat, indexFormat, meiliCall } from './meili-client.js';
import { foldName } from './name-text.js';
import {
  type NameRow,
  type OrgSearchDeps,
  type OrgSearchPage,
  type OrgSearchQuery,
  searchOrgIds,
} from './org-search.js';
import { dbTimed, engineTimed, type SearchTiming } from './search-timing.js';

/**
 * The search use case: exact-domain matches come from Postgres (stable ids, current and old public
 * labels, which the index does not hold), name matches and the order from Meilisearch, and the
 * changes the index has not applied yet from Postgres (fresh-changes.ts).
 */
export interface SearchOrgsDeps {
  db: Db;
  meili: Meilisearch;
  indexUid: string;
  domainSuffix: string;
  /**
   * Search the changes the index has not applied yet beside it (fresh-changes.ts): default on.
   * Off, the answer is the index's alone (tests of the sync itself).
   */
  freshChanges?: boolean;
  /** Where the request's time goes (the API's Server-Timing header): Meilisearch calls and Postgres reads. */
  timing?: SearchTiming;
}

/** Ids of the Orgs (zero or one) whose stable or public domain, old labels included, equals q. */
export async function orgIdsForDomain(db: Db, q: string, suffix: string): Promise<number[]> {
  const ref = parseDomain(q, suffix);
  if (ref?.kind !== 'org' && ref?.kind !== 'org-public') return [];
  const rows = await db
    .selectFrom(orgsWithDomains([ref]).as('d'))
    .select('d.org_id')
    .execute();
  return rows.map((r) => Number(r.org_id));
}

async function namesOf(db: Db, ids: readonly number[]): Promise<Map<number, NameRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('orgs')
    .select(['id', 'name'])
    .where('id', '=', sql<number>`any(${ids}::bigint[])`)
    .execute();
  return new Map(rows.map((r) => [Number(r.id), { name: r.name, uid: bizdirUid(Number(r.id)) }]));
}

/**
 * The live index's format, remembered for a moment. A rebuild swaps formats under a running API:
 * a query of the wrong format is refused by Meilisearch (it names an attribute the other format
 * lacks), and is retried once with the format read afresh.
 */
const FORMAT_TTL_MS = 2_000;
const formats = new Map<string, { format: IndexFormat; at: number }>();

async function liveFormat(
  meili: Meilisearch,
  indexUid: string,
  fresh: boolean,
  timing: SearchTiming | undefined,
): Promise<IndexFormat> {
  const known = formats.get(indexUid);
  if (!fresh && known && Date.now() - known.at < FORMAT_TTL_MS) return known.format;
  const format =
    (await meiliCall(() => engineTimed(timing, () => indexFormat(meili, indexUid)))) ?? ORG_INDEX_FORMAT;
  formats.set(indexUid, { format, at: Date.now() });
  return format;
}

export async function searchOrgs(
  deps: SearchOrgsDeps,
  query: Omit<OrgSearchQuery, 'domainOrgIds'>,
): Promise<OrgSearchPage> {
  const { timing } = deps;
  const read = <T>(fn: () => Promise<T>) => dbTimed(timing, fn);
  const [domainOrgIds, pending] = await Promise.all([
    query.q === '' ? [] : read(() => orgIdsForDomain(deps.db, query.q, deps.domainSuffix)),
    deps.freshChanges === false ? [] : read(() => pendingOrgIds(deps.db)),
  ]);
  const full = { ...query, domainOrgIds };
  const run = async (fresh: boolean) => {
    const format = await liveFormat(deps.meili, deps.indexUid, fresh, timing);
    if (format === 1) return searchV1OrgIds(deps.meili, deps.indexUid, full);
    const base = {
      meili: deps.meili,
      indexUid: deps.indexUid,
      namesOf: (ids: readonly number[]) => read(() => namesOf(deps.db, ids)),
      format,
      ...(timing ? { timing } : {}),
    };
    if (!pending || pending.length === 0) return searchOrgIds(base, full);
    return withFreshChanges(deps.db, { ...base, exclude: pending }, full);
  };
  try {
    return await run(false);
  } catch (error) {
    if (error instanceof MeilisearchApiError && error.response.status < 500) return run(true);
    throw error;
  }
}

/**
 * The index's answer without the pending Orgs, merged with those of them that answer the query
 * now (fresh-changes.ts): exact totals and pages, a change searchable as soon as it is committed.
 */
async function withFreshChanges(db: Db, deps: OrgSearchDeps, query: OrgSearchQuery): Promise<OrgSearchPage> {
  const exclude = deps.exclude ?? [];
  const folded = foldName(query.q);
  const domainIds = new Set(query.domainOrgIds);
  const read = <T>(fn: () => Promise<T>) => dbTimed(deps.timing, fn);
  const rows = await read(() => freshRows(db, exclude));
  const fresh = [...rows.values()]
    .filter((row) => answers(row, folded, domainIds))
    .map((row) => ({ id: row.id, key: orderKey(row, query.sort, folded, domainIds) }))
    .sort((a, b) => cmpKey(a.key, b.key));
  if (fresh.length === 0) return searchOrgIds(deps, query);
  const from = Math.max(0, query.offset - fresh.length);
  const indexPage = await searchOrgIds(deps, {
    ...query,
    offset: from,
    limit: query.limit + (query.offset - from),
  });
  const indexRows = await read(() => freshRows(db, indexPage.ids));
  // An Org deleted since the index answered has no row: it sorts as nothing and is dropped by the API.
  const keys = indexPage.ids.map((id) => {
    const row = indexRows.get(id);
    return row ? orderKey(row, query.sort, folded, domainIds) : (['', ''] as Key);
  });
  return mergePage(query, from, indexPage, keys, fresh);
}
