import { sql } from 'kysely';
import { type Meilisearch, MeilisearchApiError } from 'meilisearch';
import type { Db } from '../shared/db.js';
import { bizdirUid, parseDomain } from '../shared/domains.js';
import { orgsWithDomains } from '../shared/org-domains.js';
import { answers, cmpKey, freshRows, type Key, mergePage, orderKey, pendingOrgIds } from './fresh-changes.js';
import { IndexOutdatedError, type IndexState, indexState } from './index-definition.js';
import { meiliCall } from './meili-client.js';
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
 * Whether the live index is of this release's format, remembered for a moment: read again at most
 * every STATE_TTL_MS while it is (a Meilisearch call saved on almost every search), and on every
 * search while it is not, so the first search after `bizdir reindex` swapped the new index in finds it.
 */
const STATE_TTL_MS = 2_000;
const states = new Map<string, number>();

async function liveState(
  meili: Meilisearch,
  indexUid: string,
  fresh: boolean,
  timing: SearchTiming | undefined,
): Promise<IndexState> {
  const at = states.get(indexUid);
  if (!fresh && at !== undefined && Date.now() - at < STATE_TTL_MS) return 'current';
  const state = await meiliCall(() => engineTimed(timing, () => indexState(meili, indexUid)));
  if (state === 'older') states.delete(indexUid);
  else states.set(indexUid, Date.now());
  return state;
}

/** The search; IndexOutdatedError while the live index is of an older format (the API's 503). */
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
  if ((await liveState(deps.meili, deps.indexUid, false, timing)) === 'older')
    throw new IndexOutdatedError(deps.indexUid);
  const base = {
    meili: deps.meili,
    indexUid: deps.indexUid,
    namesOf: (ids: readonly number[]) => read(() => namesOf(deps.db, ids)),
    ...(timing ? { timing } : {}),
  };
  try {
    if (!pending || pending.length === 0) return await searchOrgIds(base, full);
    return await withFreshChanges(deps.db, { ...base, exclude: pending }, full);
  } catch (error) {
    // Refused by Meilisearch (a sort key or filter it does not know): an index of an older format
    // put in place since its state was read is told as such; anything else is the error it is.
    if (
      error instanceof MeilisearchApiError &&
      error.response.status < 500 &&
      (await liveState(deps.meili, deps.indexUid, true, timing)) === 'older'
    )
      throw new IndexOutdatedError(deps.indexUid);
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
