import { observeLater } from '../shared/outage.js';
import { type IndexDeps, idsOf, orgNotIn, quote, readAllIds, searchIndex } from './index-calls.js';
import { MERGE_BUDGET, mergeTrue } from './merge-checked.js';
import { nameSortKey } from './name-text.js';
import type { OrgSearchPage, OrgSearchQuery } from './search-query.js';
import { compareStrings, KEYED_ORDERS, type Keyed, keyedHits, SORT_RULES } from './sort-rules.js';
import { type Resolved, termQuery } from './term-query.js';

/**
 * `sort=relevance` (tieredPage): a page starting at most this many positions past the first tier
 * asks for the second and third tiers at once (the third from its start); a deeper page first asks
 * for the second tier's size, then for the third tier where the page starts in it.
 */
export const SHALLOW_TIERS_DEPTH = 200;

/**
 * `sort=relevance`: the Orgs whose domain or whole name equals the term, then the names starting
 * with it, then the other matches; each tier by stable domain. "Equals" and "starts with" are an
 * equality and a range on the name key (nameSortKey is prefix-preserving ASCII), so they are exact.
 */
export async function relevancePage(
  deps: IndexDeps,
  folded: string,
  query: OrgSearchQuery,
): Promise<OrgSearchPage> {
  const key = quote(nameSortKey(folded));
  // One range, not `n >= key AND n < key{`: Meilisearch evaluates each comparison over the whole
  // register and intersects them, a range reads only its own values. TO includes its end, but `{`
  // never occurs in a name key, so nothing equals it.
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
  // Awaited below, or superseded by the exact tiers: its failure then changes nothing, and the
  // names equal to the term are read as they would be without it.
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
  const first = [...firstRows].sort(([, a], [, b]) => compareStrings(a.uid, b.uid)).map(([id]) => id);
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
  deps: IndexDeps,
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
    searchIndex(deps, rest.q, {
      filter: rest.filters,
      sort: byDomain,
      offset: from,
      limit: count,
      attributesToRetrieve: ['id'],
    });
  const secondPage = (from: number) =>
    searchIndex(deps, second.q, {
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
  //   the page starts, and a second tier larger than the guess (a short term's prefix can hold a
  //   good part of the register) cost a second deep query, the first still running beside it.
  const shallow = offset - f <= SHALLOW_TIERS_DEPTH;
  const secondFrom = Math.max(0, offset - f);
  const pageEnd = Math.max(0, offset + limit - f);
  // Both awaited below (or this function has already failed with an error of its own).
  const thirdFromStart = shallow ? observeLater(third(0, pageEnd)) : undefined;
  const secondAsked = shallow ? observeLater(secondPage(secondFrom)) : undefined;
  const s =
    (secondAsked
      ? (await secondAsked).estimatedTotalHits
      : (await searchIndex(deps, second.q, { filter: second.filters, limit: 0 })).estimatedTotalHits) ?? 0;
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
