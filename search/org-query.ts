import { observeLater } from '../shared/outage.js';
import { type IndexDeps, idsOf, orgIn, readAllIds, searchIndex, sortedPage } from './index-calls.js';
import { keyedPage, MERGE_BUDGET, mergeTrue } from './merge-checked.js';
import { foldName, termMatches } from './name-text.js';
import { relevancePage } from './relevance-tiers.js';
import type { OrgSearchPage, OrgSearchQuery } from './search-query.js';
import { SMALL_TERM_MIN, smallAnswer } from './small-answer.js';
import { KEY_FIELD, KEYED_ORDERS, SORT_RULES } from './sort-rules.js';
import { termQuery } from './term-query.js';

/**
 * Org ids for a query, from the index: which Orgs match a term, in which order, and how many. The
 * term becomes an exact Meilisearch query (term-query.ts); long terms with few matches take the
 * small-answer path, `sort=relevance` its tiers (relevance-tiers.ts), and the other sorts the page
 * of the unchecked candidates, asked for while the suspects are checked, with the true suspects
 * merged into it (merge-checked.ts). Meilisearch does the sorting and paging.
 */
export async function queryOrgIds(deps: IndexDeps, query: OrgSearchQuery): Promise<OrgSearchPage> {
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
    // Awaited below, or superseded by the exact query (its failure then changes nothing).
    const guess = observeLater(
      searchIndex(deps, term.unchecked.q, {
        filter: term.unchecked.filters,
        sort,
        limit: asked,
        offset: from,
        attributesToRetrieve: ['id'],
      }),
    );
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
      // Awaited below when the merge cannot place the page; dropped (and its failure with it) when it can.
      const early =
        from > 0 && match.truly.length > query.offset - from ? observeLater(askExact()) : undefined;
      const res = await guess;
      const total = (res.estimatedTotalHits ?? 0) + match.truly.length;
      // A page past the end of the answer is empty, in any order.
      if (query.offset >= total) return { ids: [], total };
      const hits = await keyedPage(deps, idsOf(res), KEY_FIELD[query.sort]);
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
async function domainOnly(deps: IndexDeps, folded: string, domainIds: readonly number[]): Promise<number[]> {
  if (domainIds.length === 0) return [];
  const rows = await deps.namesOf(domainIds);
  return [...rows].filter(([, row]) => !termMatches(foldName(row.name), folded)).map(([id]) => id);
}
