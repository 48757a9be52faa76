import type { Meilisearch, SearchParams } from 'meilisearch';
import { meiliCall } from '../meili-client.js';
import type { OrgSearchPage, OrgSearchQuery } from '../org-search.js';
import { bucketOf, encodeQuery, queryCodes } from './org-document.js';

/**
 * Org search against the index: which Org ids match a term, in which order, and how many.
 * Every query is a filter over the encoded name suffixes (org-document.ts), so the match set is
 * exact and `estimatedTotalHits` of a placeholder search is the exact count (maxTotalHits is above
 * any register size). Results are ids only: the API reads the Orgs from Postgres.
 */
type OrgSort = OrgSearchQuery['sort'];

const SORT_RULES: Record<Exclude<OrgSort, 'relevance'>, string[]> = {
  name: ['n:asc', 'd:asc'],
  '-name': ['n:desc', 'd:asc'],
  updated: ['u:asc', 'd:asc'],
  '-updated': ['u:desc', 'd:asc'],
};

const quoted = (encoded: string) => `"${encoded}"`;
const idIn = (ids: readonly number[]) => (ids.length > 0 ? `id IN [${ids.join(',')}]` : null);
const anyOf = (parts: (string | null)[]) => {
  const kept = parts.filter((p): p is string => p !== null);
  return kept.length === 0 ? null : kept.map((p) => `(${p})`).join(' OR ');
};
/** Matches nothing: an empty OR cannot be written, and no document has id 0. */
const NOTHING = 'id = 0';

/** "The name contains q" as a filter, or null when q is longer than any indexed suffix. */
function substringFilter(q: string): string | null {
  const codes = queryCodes(q);
  if (codes === null || codes.length === 0) return null;
  if (codes.length === 1) return `c = ${quoted(codes[0]!)}`;
  const bucket = bucketOf(codes[0]! + codes[1]!);
  return codes.length === 2 ? `${bucket} EXISTS` : `${bucket} STARTS WITH ${quoted(codes.join(''))}`;
}

/**
 * The relevance tiers, best first: an exact domain or the whole name; the name starts with q; a
 * later word starts with q; q anywhere. Each tier excludes the ones before it.
 */
function relevanceTiers(q: string, domainIds: readonly number[]): string[] {
  const encoded = encodeQuery(q);
  const anywhere = substringFilter(q);
  if (encoded === null || anywhere === null) return [idIn(domainIds) ?? NOTHING];
  const e = quoted(encoded);
  const raw = [anyOf([idIn(domainIds), `p = ${e}`])!, `p STARTS WITH ${e}`, `w STARTS WITH ${e}`, anywhere];
  return raw.map((tier, i) => (i === 0 ? tier : `(${tier}) AND NOT (${anyOf(raw.slice(0, i))})`));
}

/** The filter for "matches q", or undefined for "everything". */
export function matchFilter(q: string, domainIds: readonly number[]): string | undefined {
  if (q === '') return undefined;
  // A term longer than any indexed suffix can only match by domain.
  return anyOf([idIn(domainIds), substringFilter(q)]) ?? NOTHING;
}

const ID_ONLY: Pick<SearchParams, 'attributesToRetrieve'> = { attributesToRetrieve: ['id'] };

function hitIds(hits: readonly Record<string, unknown>[]): number[] {
  return hits.map((h) => Number(h.id));
}

export async function searchV1OrgIds(
  meili: Meilisearch,
  indexUid: string,
  query: OrgSearchQuery,
): Promise<OrgSearchPage> {
  const index = meili.index(indexUid);
  if (query.sort !== 'relevance' || query.q === '') {
    const filter = matchFilter(query.q, query.domainOrgIds);
    const sort = query.sort === 'relevance' ? ['d:asc'] : SORT_RULES[query.sort];
    const res = await meiliCall(() =>
      index.search('', {
        ...(filter ? { filter } : {}),
        sort,
        limit: query.limit,
        offset: query.offset,
        ...ID_ONLY,
      }),
    );
    return { ids: hitIds(res.hits), total: res.estimatedTotalHits ?? 0 };
  }
  // Relevance: count each tier, then fetch the slices of the tiers that the page overlaps.
  const tiers = relevanceTiers(query.q, query.domainOrgIds);
  const counts = await meiliCall(() =>
    meili.multiSearch({
      queries: tiers.map((filter) => ({ indexUid, q: '', filter, limit: 0, ...ID_ONLY })),
    }),
  );
  const sizes = counts.results.map((r) => r.estimatedTotalHits ?? 0);
  const total = sizes.reduce((a, b) => a + b, 0);
  const slices: { filter: string; offset: number; limit: number }[] = [];
  let start = 0;
  const end = query.offset + query.limit;
  tiers.forEach((filter, i) => {
    const size = sizes[i]!;
    const from = Math.max(query.offset, start);
    const to = Math.min(end, start + size);
    if (to > from) slices.push({ filter, offset: from - start, limit: to - from });
    start += size;
  });
  if (slices.length === 0) return { ids: [], total };
  const pages = await meiliCall(() =>
    meili.multiSearch({
      queries: slices.map((s) => ({ indexUid, q: '', sort: ['d:asc'], ...s, ...ID_ONLY })),
    }),
  );
  return { ids: pages.results.flatMap((r) => hitIds(r.hits)), total };
}
