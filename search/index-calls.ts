import type { Meilisearch, SearchParams, SearchResponse } from 'meilisearch';
import { bizdirUid } from '../shared/domains.js';
import { indexSearch, meiliCall } from './meili-client.js';
import type { NameRow, OrgSearchPage } from './search-query.js';
import { engineTimed, type SearchTiming } from './search-timing.js';

/**
 * The Meilisearch calls a search makes, and what every one of them shares: the Orgs left out of
 * every answer, the kept-alive connections (meili-client.ts indexSearch), the timing, and unreachable turned into
 * SearchUnavailableError.
 */
export interface IndexDeps {
  meili: Meilisearch;
  indexUid: string;
  /** Names and stable ids of the given Orgs, from Postgres (missing ids are gone). */
  namesOf: (ids: readonly number[]) => Promise<Map<number, NameRow>>;
  /** Orgs left out of every answer (changed, not yet applied to the index: fresh-changes.ts). */
  exclude?: readonly number[];
  /** Where the request's time goes (the API's Server-Timing header): every Meilisearch call is timed. */
  timing?: SearchTiming;
}

/** Pages of this many ids when a whole candidate set is read. */
const READ_PAGE = 10_000;

export const quote = (value: string) => `"${value}"`;
/** "One of these Orgs", by stable domain (`bizdirUid` is the same permutation as the documents' `d`). */
export const orgIn = (ids: Iterable<number>) =>
  `d IN [${[...ids].map((id) => quote(bizdirUid(id))).join(',')}]`;
export const orgNotIn = (ids: Iterable<number>) => `NOT ${orgIn(ids)}`;

export type Params = Omit<SearchParams, 'q'>;

/** One search of the index: a term (all its words) or none, filters, the excluded Orgs left out. */
export async function searchIndex(deps: IndexDeps, q: string, params: Params): Promise<SearchResponse> {
  const { filter, ...rest } = params;
  const given = filter === undefined ? [] : Array.isArray(filter) ? filter : [filter];
  const filters = deps.exclude?.length ? [...given, orgNotIn(deps.exclude)] : given;
  const call = () =>
    indexSearch(deps.meili, deps.indexUid, {
      q,
      ...(q === '' ? {} : { matchingStrategy: 'all' }),
      ...rest,
      ...(filters.length > 0 ? { filter: filters } : {}),
    });
  return meiliCall(() => engineTimed(deps.timing, call));
}

/** Every hit answering a query (candidate sets that are known to be small), with the given fields. */
export async function readAll(
  deps: IndexDeps,
  q: string,
  filters: string[],
  fields: string[],
): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (let offset = 0; ; offset += READ_PAGE) {
    const res = await searchIndex(deps, q, {
      ...(filters.length > 0 ? { filter: filters } : {}),
      attributesToRetrieve: fields,
      limit: READ_PAGE,
      offset,
    });
    out.push(...res.hits);
    if (res.hits.length < READ_PAGE) return out;
  }
}

export async function readAllIds(deps: IndexDeps, q: string, filters: string[]): Promise<number[]> {
  return (await readAll(deps, q, filters, ['id'])).map((hit) => Number(hit.id));
}

export function idsOf(res: SearchResponse): number[] {
  return res.hits.map((h) => Number(h.id));
}

/** One page of a query in a sort, with the query's total. */
export async function sortedPage(
  deps: IndexDeps,
  q: string,
  filters: string[],
  sort: string[],
  limit: number,
  offset: number,
): Promise<OrgSearchPage> {
  const res = await searchIndex(deps, q, {
    ...(filters.length > 0 ? { filter: filters } : {}),
    sort,
    limit,
    offset,
    attributesToRetrieve: ['id'],
  });
  return { ids: idsOf(res), total: res.estimatedTotalHits ?? 0 };
}
