import type { Meilisearch, SearchParams, SearchResponse } from 'meilisearch';
import { FORMAT_PROBE } from './index-definition.js';
import { meiliCall } from './meili-client.js';
import { codeOf, foldName, planTerm, type TermShape, termMatches } from './name-text.js';

/**
 * Org search against the index: which Org ids match a term, in which order, and how many.
 *
 * A term becomes a Meilisearch query over the names' trigram words (name-text.ts). The answer of
 * that query can hold a few false candidates; they all carry one of the term's links, so they are
 * found with one filtered query, checked against their names in Postgres, and the final query
 * keeps "no link of this term, or checked and true". Every total and every page is then exact,
 * and Meilisearch does the sorting and paging. Results are ids only: the API reads the Orgs from
 * Postgres.
 */
export const ORG_SORTS = ['name', '-name', 'updated', '-updated', 'relevance'] as const;
export type OrgSort = (typeof ORG_SORTS)[number];

export const MAX_Q_LENGTH = 200;
export const MAX_WINDOW = 10_000;

export interface OrgSearchQuery {
  /** The raw term; empty lists every Org. */
  q: string;
  sort: OrgSort;
  limit: number;
  offset: number;
  /** Orgs whose stable or public domain (old labels included) equals q, found in Postgres. */
  domainOrgIds: readonly number[];
}

export interface OrgSearchPage {
  ids: number[];
  total: number;
}

export interface NameRow {
  name: string;
  uid: string;
}

export interface OrgSearchDeps {
  meili: Meilisearch;
  indexUid: string;
  /** Names and stable ids of the given Orgs, from Postgres (missing ids are gone). */
  namesOf: (ids: readonly number[]) => Promise<Map<number, NameRow>>;
}

const SORT_RULES: Record<Exclude<OrgSort, 'relevance'>, string[]> = {
  name: ['n:asc', 'd:asc'],
  '-name': ['n:desc', 'd:asc'],
  updated: ['u:asc', 'd:asc'],
  '-updated': ['u:desc', 'd:asc'],
};
const BY_DOMAIN = ['d:asc'];

/** Pages of this many ids when a whole candidate set is read. */
const READ_PAGE = 10_000;

const quote = (value: string) => `"${value}"`;
const idIn = (ids: Iterable<number>) => `id IN [${[...ids].join(',')}]`;
const idNotIn = (ids: Iterable<number>) => `NOT id IN [${[...ids].join(',')}]`;

/** A Meilisearch query (text and filters) whose answer is exactly the names matching a term. */
interface Resolved {
  q: string;
  filters: string[];
  /** The suspects that were checked, with their names (for the relevance tiers). */
  checked: Map<number, NameRow>;
}

type Params = Omit<SearchParams, 'q'>;

async function search(deps: OrgSearchDeps, q: string, params: Params): Promise<SearchResponse> {
  const index = deps.meili.index(deps.indexUid);
  const { filter, ...rest } = params;
  const given = filter === undefined ? [] : Array.isArray(filter) ? filter : [filter];
  // A term query always names a field of this format, so an index of the old format (just before
  // a rebuild's swap is noticed) refuses it instead of answering wrongly; search-orgs.ts retries.
  const filters = q !== '' && given.length === 0 ? [FORMAT_PROBE] : given;
  return meiliCall(() =>
    index.search(q, {
      ...(q === '' ? {} : { matchingStrategy: 'all' as const }),
      ...rest,
      ...(filters.length > 0 ? { filter: filters } : {}),
    }),
  );
}

/** Every id answering a query (candidate sets that are known to be small). */
async function readAllIds(deps: OrgSearchDeps, q: string, filters: string[]): Promise<number[]> {
  const out: number[] = [];
  for (let offset = 0; ; offset += READ_PAGE) {
    const res = await search(deps, q, {
      ...(filters.length > 0 ? { filter: filters } : {}),
      attributesToRetrieve: ['id'],
      limit: READ_PAGE,
      offset,
    });
    for (const hit of res.hits) out.push(Number(hit.id));
    if (res.hits.length < READ_PAGE) return out;
  }
}

/** The query for "the name contains the folded term" (anchored by shape), with its suspects checked. */
async function resolveTerm(deps: OrgSearchDeps, folded: string, shape: TermShape = {}): Promise<Resolved> {
  const plan = planTerm(folded, shape);
  if (plan.kind === 'prefix') return { q: plan.prefix, filters: [], checked: new Map() };
  const q = quote(plan.words.join(' '));
  const linkList = `[${plan.links.map(quote).join(',')}]`;
  const suspects = await readAllIds(deps, q, [`l IN ${linkList}`]);
  if (suspects.length === 0) return { q, filters: [], checked: new Map() };
  const checked = await deps.namesOf(suspects);
  const truly = [...checked]
    .filter(([, row]) => termMatches(foldName(row.name), folded, shape))
    .map(([id]) => id);
  const keep = truly.length > 0 ? `(NOT l IN ${linkList}) OR ${idIn(truly)}` : `NOT l IN ${linkList}`;
  return { q, filters: [keep], checked };
}

function idsOf(res: SearchResponse): number[] {
  return res.hits.map((h) => Number(h.id));
}

async function sortedPage(
  deps: OrgSearchDeps,
  q: string,
  filters: string[],
  sort: string[],
  limit: number,
  offset: number,
): Promise<OrgSearchPage> {
  const res = await search(deps, q, {
    ...(filters.length > 0 ? { filter: filters } : {}),
    sort,
    limit,
    offset,
    attributesToRetrieve: ['id'],
  });
  return { ids: idsOf(res), total: res.estimatedTotalHits ?? 0 };
}

export async function searchOrgIds(deps: OrgSearchDeps, query: OrgSearchQuery): Promise<OrgSearchPage> {
  const folded = foldName(query.q);
  if (folded === '') {
    const sort = query.sort === 'relevance' ? BY_DOMAIN : SORT_RULES[query.sort];
    return sortedPage(deps, '', [], sort, query.limit, query.offset);
  }
  if (query.sort === 'relevance') return relevancePage(deps, folded, query);
  const sort = SORT_RULES[query.sort];
  const match = await resolveTerm(deps, folded);
  const extra = await domainOnly(deps, folded, query.domainOrgIds);
  if (extra.length === 0) return sortedPage(deps, match.q, match.filters, sort, query.limit, query.offset);
  // An Org found by its domain but not by its name: let Meilisearch order the union by id. Terms
  // that parse as domains match few names, so the whole set is small.
  const all = [...(await readAllIds(deps, match.q, match.filters)), ...extra];
  return sortedPage(deps, '', [idIn(all)], sort, query.limit, query.offset);
}

/** Domain matches whose name does not contain the term. */
async function domainOnly(
  deps: OrgSearchDeps,
  folded: string,
  domainIds: readonly number[],
): Promise<number[]> {
  if (domainIds.length === 0) return [];
  const rows = await deps.namesOf(domainIds);
  return [...rows].filter(([, row]) => !termMatches(foldName(row.name), folded)).map(([id]) => id);
}

interface Tier {
  size: number;
  page: (offset: number, limit: number) => Promise<number[]>;
}

/**
 * `sort=relevance`: the Orgs whose domain or whole name equals the term, then the names starting
 * with it, then the other matches; each tier by stable domain.
 */
async function relevancePage(
  deps: OrgSearchDeps,
  folded: string,
  query: OrgSearchQuery,
): Promise<OrgSearchPage> {
  const oneChar = [...folded].length === 1;
  const [equal, starts, anywhere] = await Promise.all([
    resolveTerm(deps, folded, { start: true, end: true }),
    oneChar ? null : resolveTerm(deps, folded, { start: true }),
    oneChar ? null : resolveTerm(deps, folded),
  ]);
  const equalIds = await readAllIds(deps, equal.q, equal.filters);
  const firstIds = [...new Set([...query.domainOrgIds, ...equalIds])];
  const firstRows = await deps.namesOf(firstIds);
  const first = [...firstRows]
    .sort(([, a], [, b]) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0))
    .map(([id]) => id);
  const notFirst = first.length > 0 ? [idNotIn(first)] : [];

  let second: { q: string; filters: string[] };
  let rest: { q: string; filters: string[] };
  let restExtra: { id: number; uid: string }[] = [];
  if (oneChar) {
    // "Starts with" a single character is the first-character field.
    const code = quote(codeOf(folded));
    second = { q: '', filters: [`f = ${code}`, ...notFirst] };
    rest = { q: codeOf(folded), filters: [`f != ${code}`, ...notFirst] };
  } else {
    second = { q: starts!.q, filters: [...starts!.filters, ...notFirst] };
    // The other matches: the term anywhere, minus every name holding all the words of "starts
    // with" (the negative phrase). That also drops the few names that only look like they start
    // with the term; they were checked while resolving "starts with", and come back here.
    // (The negative phrase goes first: a prefix term must stay the query's last word.)
    rest = { q: `-${starts!.q} ${anywhere!.q}`, filters: [...anywhere!.filters, ...notFirst] };
    const firstSet = new Set(first);
    restExtra = [...starts!.checked]
      .filter(([id, row]) => {
        const name = foldName(row.name);
        return !firstSet.has(id) && !name.startsWith(folded) && name.includes(folded);
      })
      .map(([id, row]) => ({ id, uid: row.uid }))
      .sort((a, b) => (a.uid < b.uid ? -1 : 1));
  }
  const [secondCount, restCount] = await Promise.all([
    search(deps, second.q, { filter: second.filters, limit: 0 }),
    search(deps, rest.q, { filter: rest.filters, limit: 0 }),
  ]);
  const tiers: Tier[] = [
    { size: first.length, page: async (o, l) => first.slice(o, o + l) },
    {
      size: secondCount.estimatedTotalHits ?? 0,
      page: async (o, l) => (await sortedPage(deps, second.q, second.filters, BY_DOMAIN, l, o)).ids,
    },
    {
      size: (restCount.estimatedTotalHits ?? 0) + restExtra.length,
      page: (o, l) => mergedSlice(deps, rest, restExtra, o, l),
    },
  ];
  const total = tiers.reduce((sum, t) => sum + t.size, 0);
  const end = query.offset + query.limit;
  const parts: Promise<number[]>[] = [];
  let start = 0;
  for (const tier of tiers) {
    const from = Math.max(query.offset, start);
    const to = Math.min(end, start + tier.size);
    if (to > from) parts.push(tier.page(from - start, to - from));
    start += tier.size;
  }
  return { ids: (await Promise.all(parts)).flat(), total };
}

/**
 * A page of (Meilisearch's answer ∪ a few extra Orgs), everything ordered by stable domain. The
 * extras are placed by comparing domains, which are ASCII, so the order is Meilisearch's own.
 */
async function mergedSlice(
  deps: OrgSearchDeps,
  base: { q: string; filters: string[] },
  extra: readonly { id: number; uid: string }[],
  offset: number,
  limit: number,
): Promise<number[]> {
  if (extra.length === 0) return (await sortedPage(deps, base.q, base.filters, BY_DOMAIN, limit, offset)).ids;
  const from = Math.max(0, offset - extra.length);
  const res = await search(deps, base.q, {
    filter: base.filters,
    sort: BY_DOMAIN,
    offset: from,
    limit: limit + extra.length,
    attributesToRetrieve: ['id', 'd'],
  });
  const fetched = res.hits.map((h) => ({ id: Number(h.id), uid: String(h.d) }));
  const exhausted = from + fetched.length >= (res.estimatedTotalHits ?? 0);
  const extraBefore = (uid: string) => extra.filter((e) => e.uid < uid).length;
  const ranked: { id: number; rank: number }[] = fetched.map((f, i) => ({
    id: f.id,
    rank: from + i + extraBefore(f.uid),
  }));
  const low = fetched[0]?.uid;
  const high = fetched[fetched.length - 1]?.uid;
  extra.forEach((e, i) => {
    const aboveLow = from === 0 || (low !== undefined && e.uid > low);
    const belowHigh = exhausted || (high !== undefined && e.uid < high);
    if (!aboveLow || !belowHigh) return;
    const baseBefore = from + fetched.filter((f) => f.uid < e.uid).length;
    ranked.push({ id: e.id, rank: baseBefore + i });
  });
  return ranked
    .filter((r) => r.rank >= offset && r.rank < offset + limit)
    .sort((a, b) => a.rank - b.rank)
    .map((r) => r.id);
}
