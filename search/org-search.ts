import type { Meilisearch, SearchParams, SearchResponse } from 'meilisearch';
import { bizdirUid } from '../shared/domains.js';
import { LARGE_ANSWER, LARGE_ANSWER_INIT, meiliCall } from './meili-client.js';
import { decodeNameKey, foldName, nameSortKey, planTerm, termMatches } from './name-text.js';
import { engineTimed, type SearchTiming } from './search-timing.js';

/**
 * Org search against the index: which Org ids match a term, in which order, and how many.
 *
 * A term becomes a Meilisearch query over the names' trigram words (name-text.ts). The answer of
 * that query can hold a few false candidates; they all carry one of the term's links, so they are
 * found with one filtered query, checked against the names their documents hold (decoded from
 * the sort key `n`), and the final query
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
  /** Orgs left out of every answer (changed, not yet applied to the index: fresh-changes.ts). */
  exclude?: readonly number[];
  /** Where the request's time goes (the API's Server-Timing header): every Meilisearch call is timed. */
  timing?: SearchTiming;
}

/** `relevance` is tiers, each by stable domain. */
type SortRules = Record<Exclude<OrgSort, 'relevance'>, string[]> & { byDomain: string[] };
/**
 * Each order's keys (org-document.ts): the first characters of the name key (`n1`) and of the stable
 * domain (`d1`) are sorted on before the buckets (`np`, `db`), and the buckets before the exact keys,
 * so a deep page skips whole letters, then whole buckets, before it walks exact values. `updated`
 * splits a group of equal `updated` by `ua` (`ud` descending), `updated` and the stable domain's
 * bucket in one number: Meilisearch starts that rule once for every group the page reaches, and a
 * start of `db` reads most of its facet tree (org-document.ts updatedThenBucket).
 */
const SORT_RULES: SortRules = {
  name: ['n1:asc', 'np:asc', 'n:asc', 'd:asc'],
  '-name': ['n1:desc', 'np:desc', 'n:desc', 'd:asc'],
  updated: ['u:asc', 'ua:asc', 'd:asc'],
  '-updated': ['u:desc', 'ud:desc', 'd:asc'],
  byDomain: ['d1:asc', 'db:asc', 'd:asc'],
};

/** Pages of this many ids when a whole candidate set is read. */
const READ_PAGE = 10_000;

const quote = (value: string) => `"${value}"`;
/** "One of these Orgs", by stable domain (`bizdirUid` is the same permutation as the documents' `d`). */
const orgIn = (ids: Iterable<number>) => `d IN [${[...ids].map((id) => quote(bizdirUid(id))).join(',')}]`;
const orgNotIn = (ids: Iterable<number>) => `NOT ${orgIn(ids)}`;

/** A Meilisearch query (text and filters) whose answer is exactly the names matching a term. */
interface Resolved {
  q: string;
  filters: string[];
  /**
   * The suspects found true, with their keys: the Orgs `filters` adds to the unchecked query's
   * answer. Absent when there were none.
   */
  truly?: Keyed[];
}

/** An Org with the exact keys of every order (the displayed `n`, `d`, `u`). */
interface Keyed {
  id: number;
  n: string;
  d: string;
  u: number;
}

type KeyedOrder = (a: Keyed, b: Keyed) => number;

const cmpStr = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Meilisearch's orders on the exact keys (SORT_RULES: a bucket is a prefix of its key, cut at a width
 * that depends only on characters it keeps, `db` and `d1` of `d`, `ua` and `ud` of `u` and `db`, so
 * none changes the order). Strings compare as bytes, as Meilisearch's facet values of these ASCII
 * keys do.
 */
const KEYED_ORDERS: Record<Exclude<OrgSort, 'relevance'> | 'byDomain', KeyedOrder> = {
  name: (a, b) => cmpStr(a.n, b.n) || cmpStr(a.d, b.d),
  '-name': (a, b) => cmpStr(b.n, a.n) || cmpStr(a.d, b.d),
  updated: (a, b) => a.u - b.u || cmpStr(a.d, b.d),
  '-updated': (a, b) => b.u - a.u || cmpStr(a.d, b.d),
  byDomain: (a, b) => cmpStr(a.d, b.d),
};

/** The key a sort needs from the documents besides `d`, which the API computes from the id. */
const KEY_FIELD: Record<Exclude<OrgSort, 'relevance'> | 'byDomain', 'n' | 'u' | null> = {
  name: 'n',
  '-name': 'n',
  updated: 'u',
  '-updated': 'u',
  byDomain: null,
};

/**
 * Hits as Keyed (`d` from the id, `bizdirUid`), or null when one lacks a key of `need` (an index
 * whose settings predate `u` displayed). A key not read is left empty: the order does not use it.
 */
function keyedHits(hits: readonly Record<string, unknown>[], need: readonly ('n' | 'u')[]): Keyed[] | null {
  const out: Keyed[] = [];
  for (const h of hits) {
    if (need.includes('n') && typeof h.n !== 'string') return null;
    if (need.includes('u') && typeof h.u !== 'number') return null;
    const id = Number(h.id);
    out.push({ id, n: typeof h.n === 'string' ? h.n : '', d: bizdirUid(id), u: Number(h.u ?? 0) });
  }
  return out;
}

/**
 * The page's hits with the key their order needs, read by id: a filter on `d` without a sort, a
 * few milliseconds where the exact sorted query deep in a large set takes tens.
 */
async function keyed(
  deps: OrgSearchDeps,
  ids: readonly number[],
  field: 'n' | 'u' | null,
): Promise<Keyed[] | null> {
  if (field === null || ids.length === 0)
    return keyedHits(
      ids.map((id) => ({ id })),
      [],
    );
  const res = await search(deps, '', {
    filter: [orgIn(ids)],
    limit: ids.length,
    attributesToRetrieve: ['id', field],
  });
  const byId = new Map(res.hits.map((h) => [Number(h.id), h]));
  // In the page's order; an id the filter no longer finds (just deleted) cannot be placed.
  const hits = ids.map((id) => byId.get(id));
  return hits.every((h) => h !== undefined) ? keyedHits(hits, [field]) : null;
}

/**
 * True suspects merged into a page here instead of asking Meilisearch again. When a term's suspects
 * hold true matches, the exact answer is the unchecked candidates' plus those few, and the page
 * asked for while the suspects were checked (`guess`) started MERGE_BUDGET positions early: every
 * true suspect that sorts before the page shifts it by one, and as long as at most MERGE_BUDGET do,
 * the page is the merge of the guess's hits and the true suspects. Otherwise the exact query is
 * asked as before. True suspects cluster: 109 of the 113 of `holdings` at 5.7M are "THE … TRADING
 * HOLDINGS" names, all before a `-name` page at 9,900; 200 (was 100) places that page and
 * `property`'s (182) without the exact query, for no measurable cost on the guess.
 */
export const MERGE_BUDGET = 200;

/**
 * `sort=relevance` (tieredPage): a page starting at most this many positions past the first tier
 * asks for the second and third tiers at once (the third from its start); a deeper page first asks
 * for the second tier's size, then for the third tier where the page starts in it.
 */
export const SHALLOW_TIERS_DEPTH = 200;

/**
 * The ids at [offset, offset + limit) of the order `cmp` over A ∪ T, given A's hits from position
 * `from` to `offset + limit` (fewer where A ends) and all of T; null when they do not place the
 * page: the true suspects that sort before the first hit are more than `offset - from`, so where
 * among A's earlier Orgs they fall is unknown.
 *
 * The page never runs past the last hit into Orgs of A that were not asked for: with H hits asked,
 * the page ends at merged index H - 1 - (suspects before the first hit), and the last hit is at
 * H - 1 or later.
 */
export function mergeTrue(
  hits: readonly Keyed[],
  from: number,
  truly: readonly Keyed[],
  offset: number,
  limit: number,
  cmp: KeyedOrder,
): number[] | null {
  if (from > 0 && hits.length === 0) return null;
  const sorted = [...truly].sort(cmp);
  // Position of the first hit in the whole order: `from`, plus the true suspects before it.
  const before = from > 0 ? sorted.filter((t) => cmp(t, hits[0]!) < 0).length : 0;
  const start = offset - (from + before);
  if (start < 0) return null;
  const merged = [...hits, ...sorted.slice(before)].sort(cmp);
  return merged.slice(start, start + limit).map((h) => h.id);
}

type Params = Omit<SearchParams, 'q'>;

/** About what one hit of ids only takes in an answer (`{"id":1234567},`). */
const ID_BYTES = 17;

/**
 * About how large an answer is: a hit with more than its id (a name key, `u`) takes about four
 * times an id's bytes (`{"id":1234567,"n":"…"}`), so 40 such hits already pass the size that a
 * kept-alive connection delays (meili-client.ts LARGE_ANSWER).
 */
function answerBytes(params: Params): number {
  const fields = params.attributesToRetrieve;
  const idsOnly = fields !== undefined && fields.length === 1 && fields[0] === 'id';
  return (params.limit ?? 20) * ID_BYTES * (idsOnly ? 1 : 4);
}

async function search(deps: OrgSearchDeps, q: string, params: Params): Promise<SearchResponse> {
  const index = deps.meili.index(deps.indexUid);
  const { filter, ...rest } = params;
  const given = filter === undefined ? [] : Array.isArray(filter) ? filter : [filter];
  const filters = deps.exclude?.length ? [...given, orgNotIn(deps.exclude)] : given;
  const call = () =>
    index.search(
      q,
      {
        ...(q === '' ? {} : { matchingStrategy: 'all' as const }),
        ...rest,
        ...(filters.length > 0 ? { filter: filters } : {}),
      },
      answerBytes(params) > LARGE_ANSWER * ID_BYTES ? LARGE_ANSWER_INIT : undefined,
    );
  return meiliCall(() => engineTimed(deps.timing, call));
}

/** Every hit answering a query (candidate sets that are known to be small), with the given fields. */
async function readAll(
  deps: OrgSearchDeps,
  q: string,
  filters: string[],
  fields: string[],
): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (let offset = 0; ; offset += READ_PAGE) {
    const res = await search(deps, q, {
      ...(filters.length > 0 ? { filter: filters } : {}),
      attributesToRetrieve: fields,
      limit: READ_PAGE,
      offset,
    });
    out.push(...res.hits);
    if (res.hits.length < READ_PAGE) return out;
  }
}

async function readAllIds(deps: OrgSearchDeps, q: string, filters: string[]): Promise<number[]> {
  return (await readAll(deps, q, filters, ['id'])).map((hit) => Number(hit.id));
}

/**
 * The query for "the name contains the folded term", in two steps: `unchecked` is the query of the
 * candidates that carry none of the term's links (exact matches, no check needed), known at once;
 * `resolved` reads the suspects, checks them against their own names and gives the exact query.
 */
interface TermQuery {
  unchecked: Resolved;
  resolved: Promise<Resolved>;
  /** True when the term can have no suspects, so `unchecked` is the exact query. */
  exact: boolean;
}

function termQuery(deps: OrgSearchDeps, folded: string): TermQuery {
  const plan = planTerm(folded);
  if (plan.kind === 'prefix') {
    const exact = { q: plan.prefix, filters: [] };
    return { unchecked: exact, resolved: Promise.resolve(exact), exact: true };
  }
  const q = quote(plan.words.join(' '));
  const linkList = `[${plan.links.map(quote).join(',')}]`;
  const unchecked = { q, filters: [`NOT l IN ${linkList}`] };
  // A term without links (three characters: one trigram, nothing to fake) has no suspects: reading
  // `l IN []` cost a Meilisearch call that could only answer nothing.
  if (plan.links.length === 0) return { unchecked, resolved: Promise.resolve(unchecked), exact: true };
  const resolved = (async () => {
    // Each suspect is checked against the folded name its own document holds, decoded from its
    // sort key `n`: no round trip to Postgres (thousands of random reads at the register's size),
    // and the answer is the index's own, like every other part of it.
    const suspects = await readAll(deps, q, [`l IN ${linkList}`], ['id', 'n', 'u']);
    if (suspects.length === 0) return unchecked;
    const trueHits = suspects.filter((hit) => termMatches(decodeNameKey(String(hit.n)), folded));
    if (trueHits.length === 0) return unchecked;
    const truly = trueHits.map((hit) => Number(hit.id));
    const withKeys = keyedHits(trueHits, ['n', 'u']);
    return {
      q,
      filters: [`(NOT l IN ${linkList}) OR ${orgIn(truly)}`],
      ...(withKeys ? { truly: withKeys } : {}),
    };
  })();
  return { unchecked, resolved, exact: false };
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

/**
 * Long terms usually name one company or a few: a term of SMALL_TERM_MIN characters or more is
 * first looked up by every third of its trigrams (a cover of the term: a name holding the term holds
 * them all) and, when that finds at most SMALL_ANSWER names, each is checked on the name its
 * document holds and the page is sorted here: one Meilisearch call instead of three to five.
 * Meilisearch intersects a phrase pair by pair, so a third of the words costs about a third
 * (5.7M Orgs: a whole name of 33 trigrams 39-108 ms, its cover of 12 in 18-22 ms). More candidates
 * than that: the full plan below.
 */
export const SMALL_TERM_MIN = 10;
export const SMALL_ANSWER = 200;

interface SmallHit {
  id: number;
  n: string;
  d: string;
}

async function smallAnswer(
  deps: OrgSearchDeps,
  folded: string,
  query: OrgSearchQuery,
): Promise<OrgSearchPage | null> {
  const plan = planTerm(folded);
  if (plan.kind !== 'phrase') return null;
  const { words } = plan;
  const cover = [...new Set([...words.filter((_, i) => i % 3 === 0), words[words.length - 1]!])];
  const res = await search(deps, quote(cover.join(' ')), {
    limit: SMALL_ANSWER + 1,
    attributesToRetrieve: ['id', 'n', 'd'],
  });
  if (res.hits.length > SMALL_ANSWER) return null;
  const hits = (res.hits as unknown as SmallHit[]).filter((h) =>
    termMatches(decodeNameKey(String(h.n)), folded),
  );
  if (hits.length === 0) return { ids: [], total: 0 };
  if (query.sort === 'updated' || query.sort === '-updated') {
    // The `updated` keys are not displayed fields: Meilisearch orders these few ids itself.
    const ids = hits.map((h) => Number(h.id));
    return sortedPage(deps, '', [orgIn(ids)], SORT_RULES[query.sort], query.limit, query.offset);
  }
  // Meilisearch's orders (SORT_RULES; a bucket is a prefix of its key, so it changes no order).
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const key = nameSortKey(folded);
  const tier = (h: SmallHit) => (h.n === key ? 0 : h.n.startsWith(key) ? 1 : 2);
  const order = {
    name: (a: SmallHit, b: SmallHit) => cmp(a.n, b.n) || cmp(a.d, b.d),
    '-name': (a: SmallHit, b: SmallHit) => cmp(b.n, a.n) || cmp(a.d, b.d),
    relevance: (a: SmallHit, b: SmallHit) => tier(a) - tier(b) || cmp(a.d, b.d),
  };
  hits.sort(order[query.sort]);
  return {
    ids: hits.slice(query.offset, query.offset + query.limit).map((h) => Number(h.id)),
    total: hits.length,
  };
}

export async function searchOrgIds(deps: OrgSearchDeps, query: OrgSearchQuery): Promise<OrgSearchPage> {
  const folded = foldName(query.q);
  if (folded === '') {
    const sort = SORT_RULES[query.sort === 'relevance' ? 'byDomain' : query.sort];
    return sortedPage(deps, '', [], sort, query.limit, query.offset);
  }
  // A domain match joins the full plan.
  if (query.domainOrgIds.length === 0 && [...folded].length >= SMALL_TERM_MIN) {
    const small = await smallAnswer(deps, folded, query);
    if (small) return small;
  }
  if (query.sort === 'relevance') return relevancePage(deps, folded, query);
  const sort = SORT_RULES[query.sort];
  const term = termQuery(deps, folded);
  const extra = await domainOnly(deps, folded, query.domainOrgIds);
  if (extra.length === 0) {
    // Most terms have no true suspect: the page of the unchecked candidates is then the answer, so
    // it is asked for while the suspects are checked. It starts MERGE_BUDGET early (a term that can
    // have suspects), so that a few true suspects are merged into it here; more, and the exact query
    // is asked.
    const from = !term.exact ? Math.max(0, query.offset - MERGE_BUDGET) : query.offset;
    const asked = query.limit + (query.offset - from);
    const guess = search(deps, term.unchecked.q, {
      filter: term.unchecked.filters,
      sort,
      limit: asked,
      offset: from,
      attributesToRetrieve: ['id'],
    });
    // Awaited below, or superseded by the exact query (its failure then changes nothing).
    guess.catch(() => undefined);
    const match = await term.resolved;
    if (match === term.unchecked) {
      const res = await guess;
      const skip = query.offset - from;
      return { ids: idsOf(res).slice(skip, skip + query.limit), total: res.estimatedTotalHits ?? 0 };
    }
    const askExact = () => sortedPage(deps, match.q, match.filters, sort, query.limit, query.offset);
    if (match.truly) {
      // More true suspects than the guess's head start: if more than that many sort before the
      // page, the merge cannot place it, so the exact query is asked now, beside the merge,
      // instead of after it. A guess from the first position always places the page.
      const early = from > 0 && match.truly.length > query.offset - from ? askExact() : undefined;
      early?.catch(() => undefined);
      const res = await guess;
      const total = (res.estimatedTotalHits ?? 0) + match.truly.length;
      // A page past the end of the answer is empty, in any order.
      if (query.offset >= total) return { ids: [], total };
      const hits = await keyed(deps, idsOf(res), KEY_FIELD[query.sort]);
      const ids =
        hits && mergeTrue(hits, from, match.truly, query.offset, query.limit, KEYED_ORDERS[query.sort]);
      if (ids) return { ids, total };
      if (early) return early;
    }
    return askExact();
  }
  const match = await term.resolved;
  // An Org found by its domain but not by its name: let Meilisearch order the union by id. Terms
  // that parse as domains match few names, so the whole set is small.
  const all = [...(await readAllIds(deps, match.q, match.filters)), ...extra];
  return sortedPage(deps, '', [orgIn(all)], sort, query.limit, query.offset);
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

/**
 * `sort=relevance`: the Orgs whose domain or whole name equals the term, then the names starting
 * with it, then the other matches; each tier by stable domain. "Equals" and "starts with" are an
 * equality and a range on the name key (nameSortKey is prefix-preserving ASCII), so they are exact.
 */
async function relevancePage(
  deps: OrgSearchDeps,
  folded: string,
  query: OrgSearchQuery,
): Promise<OrgSearchPage> {
  const key = quote(nameSortKey(folded));
  // One range, not `n >= key AND n < key{`: Meilisearch evaluates each comparison over the whole
  // register and intersects them (6-7 ms at 5.7M for any term), a range reads only its own values
  // (under 1 ms). TO includes its end, but `{` never occurs in a name key, so nothing equals it.
  const startsWith = `n ${key} TO ${quote(`${nameSortKey(folded)}{`)}`;
  const term = termQuery(deps, folded);
  // Usually no Org's domain or whole name equals the term and no suspect is true: the tiers of the
  // unchecked candidates are then the answer, so they are asked for while that is being found out.
  // Its third tier starts MERGE_BUDGET early (a term that can have suspects), so that a few true
  // suspects are merged into it here.
  const budget = !term.exact ? MERGE_BUDGET : 0;
  let secondSize: (size: number) => void = () => undefined;
  const secondKnown = new Promise<number>((resolve) => {
    secondSize = resolve;
  });
  const guess =
    query.domainOrgIds.length === 0
      ? tieredPage(deps, term.unchecked, [], startsWith, query, budget, secondSize)
      : undefined;
  // Awaited below, or superseded by the exact tiers (its failure then changes nothing, and the
  // names equal to the term are then read as they would be without it).
  guess?.catch(() => secondSize(-1));
  // A name equal to the term starts with it: when the guess's second tier (the names starting with
  // the term) is empty, so is this tier, and it is not asked for (one Meilisearch call fewer for
  // most terms of four or more characters).
  const readEqual = () => readAllIds(deps, '', [`n = ${key}`]);
  const equal = guess ? secondKnown.then((size) => (size === 0 ? [] : readEqual())) : readEqual();
  const [match, equalIds] = await Promise.all([term.resolved, equal]);
  if (guess && equalIds.length === 0) {
    if (match === term.unchecked) return (await guess).page;
    if (match.truly) {
      // True suspects whose name starts with the term are in the second tier already (a filter on
      // the name key alone); the others join the third.
      const prefix = nameSortKey(folded);
      const joining = match.truly.filter((t) => !t.n.startsWith(prefix));
      const merged = mergeThirdTier(await guess, joining);
      if (merged) return merged;
    }
  }
  const firstIds = [...new Set([...query.domainOrgIds, ...equalIds])];
  const firstRows = await deps.namesOf(firstIds);
  const first = [...firstRows]
    .sort(([, a], [, b]) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0))
    .map(([id]) => id);
  return (await tieredPage(deps, match, first, startsWith, query)).page;
}

/** A page of the relevance tiers, with what merging more Orgs into its third tier needs. */
interface TieredPage {
  page: OrgSearchPage;
  /** The ids of the first two tiers on the page. */
  head: number[];
  /** The third tier's part of the page: its position in the tier and its length. */
  restOffset: number;
  restLimit: number;
  /** The third tier's size. */
  restTotal: number;
  /** The third tier's hits as asked: from position `restFrom` to the page's end. */
  restHits: Record<string, unknown>[];
  restFrom: number;
}

/**
 * The page with `joining` (true suspects of the third tier, with their keys) added to that tier,
 * or null when the hits asked for do not determine it (mergeTrue).
 */
function mergeThirdTier(tiered: TieredPage, joining: readonly Keyed[]): OrgSearchPage | null {
  const total = tiered.page.total + joining.length;
  // No third-tier part on the page, or the page starts past that tier's end (in any order).
  if (tiered.restLimit === 0 || tiered.restOffset >= tiered.restTotal + joining.length)
    return { ids: tiered.head, total };
  // The third tier is ordered by stable domain, which the API computes from the ids.
  const hits = keyedHits(tiered.restHits, []);
  if (!hits) return null;
  const rest = mergeTrue(
    hits,
    tiered.restFrom,
    joining,
    tiered.restOffset,
    tiered.restLimit,
    KEYED_ORDERS.byDomain,
  );
  return rest ? { ids: [...tiered.head, ...rest], total } : null;
}

/**
 * The relevance tiers of an exact term query, given the first tier (ids in stable-domain order).
 * `early`: the third tier's page is asked for that many positions early, for mergeThirdTier.
 */
async function tieredPage(
  deps: OrgSearchDeps,
  match: Resolved,
  first: number[],
  startsWith: string,
  query: OrgSearchQuery,
  early = 0,
  /** Told the second tier's size as soon as it is known, before the third tier's answer. */
  secondSize?: (size: number) => void,
): Promise<TieredPage> {
  const notFirst = first.length > 0 ? [orgNotIn(first)] : [];
  const second = { q: '', filters: [startsWith, ...notFirst] };
  const rest = { q: match.q, filters: [...match.filters, `NOT (${startsWith})`, ...notFirst] };
  const { offset, limit } = query;
  const f = first.length;
  const byDomain = SORT_RULES.byDomain;
  /** The third tier's hits from `from` on, `count` of them (0: its size alone). */
  const third = (from: number, count: number) =>
    search(deps, rest.q, {
      filter: rest.filters,
      sort: byDomain,
      offset: from,
      limit: count,
      attributesToRetrieve: ['id'],
    });
  const secondPage = (from: number) =>
    search(deps, second.q, {
      filter: second.filters,
      sort: byDomain,
      offset: from,
      limit,
      attributesToRetrieve: ['id'],
    });
  // Where the third tier's part of the page starts depends on the size of the second tier (the
  // names starting with the term).
  // - A page within SHALLOW_TIERS_DEPTH of the second tier's start asks for both tiers at once: the
  //   second tier's part of the page (its total is the tier's size) and the third tier from its
  //   start to the page's end, which holds the page whatever the second tier's size.
  // - A deeper page first asks for the second tier's size alone: a filter without a sort, under a
  //   millisecond in Meilisearch (a range on the name key). Then it asks for the third tier where
  //   the page starts in it (the costly part, asked once), and for the second tier's part only when
  //   the page reaches into it. Asking the third tier before knowing the size meant guessing where
  //   the page starts, and a second tier larger than the guess (short terms: 250,647 names start
  //   with "r" at 5.7M) cost a second deep query, the first still running beside it.
  const shallow = offset - f <= SHALLOW_TIERS_DEPTH;
  const secondFrom = Math.max(0, offset - f);
  const pageEnd = Math.max(0, offset + limit - f);
  const thirdFromStart = shallow ? third(0, pageEnd) : undefined;
  thirdFromStart?.catch(() => undefined);
  const secondAsked = shallow ? secondPage(secondFrom) : undefined;
  secondAsked?.catch(() => undefined);
  const s =
    (secondAsked
      ? (await secondAsked).estimatedTotalHits
      : (await search(deps, second.q, { filter: second.filters, limit: 0 })).estimatedTotalHits) ?? 0;
  secondSize?.(s);
  const restOffset = Math.max(0, offset - f - s);
  const restLimit = Math.max(0, Math.min(limit, offset + limit - f - s - restOffset));
  const restFrom = restLimit > 0 ? Math.max(0, restOffset - early) : restOffset;
  const restAsked = restLimit > 0 ? restLimit + (restOffset - restFrom) : 0;
  // `thirdFromStart` holds the third tier's positions 0 to pageEnd, and restFrom + restAsked <= pageEnd.
  const restRes = thirdFromStart ?? third(restFrom, restAsked);
  const inSecond = Math.max(0, Math.min(s, pageEnd) - secondFrom);
  const secondRes = secondAsked ?? (inSecond > 0 ? secondPage(secondFrom) : undefined);
  const [restAnswer, secondHits] = await Promise.all([
    restRes,
    secondRes ? secondRes.then(idsOf) : ([] as number[]),
  ]);
  const restHits = thirdFromStart ? restAnswer.hits.slice(restFrom, restFrom + restAsked) : restAnswer.hits;
  const head = [...first.slice(offset, offset + limit), ...secondHits.slice(0, inSecond)];
  const restTotal = restAnswer.estimatedTotalHits ?? 0;
  const skip = restOffset - restFrom;
  return {
    page: {
      ids: [...head, ...restHits.slice(skip, skip + restLimit).map((h) => Number(h.id))],
      total: f + s + restTotal,
    },
    head,
    restOffset,
    restLimit,
    restTotal,
    restHits,
    restFrom,
  };
}
