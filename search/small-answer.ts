import { type IndexDeps, orgIn, quote, searchIndex, sortedPage } from './index-calls.js';
import { decodeNameKey, nameSortKey, planTerm, termMatches } from './name-text.js';
import type { OrgSearchPage, OrgSearchQuery } from './search-query.js';
import { compareStrings, SORT_RULES } from './sort-rules.js';

/**
 * Long terms usually name one company or a few: a term of SMALL_TERM_MIN characters or more is
 * first looked up by every third of its trigrams (a cover of the term: a name holding the term holds
 * them all) and, when that finds at most SMALL_ANSWER names, each is checked on the name its
 * document holds and the page is sorted here: one Meilisearch call instead of three to five.
 * Meilisearch intersects a phrase pair by pair, so a third of the words costs about a third of the
 * whole phrase (docs/benchmarks.md). More candidates than that: the full plan (org-query.ts).
 */
export const SMALL_TERM_MIN = 10;
export const SMALL_ANSWER = 200;

interface SmallHit {
  id: number;
  n: string;
  d: string;
}

/** The page from the term's cover alone, or null when the cover finds more than SMALL_ANSWER names. */
export async function smallAnswer(
  deps: IndexDeps,
  folded: string,
  query: OrgSearchQuery,
): Promise<OrgSearchPage | null> {
  const plan = planTerm(folded);
  if (plan.kind !== 'phrase') return null;
  const { words } = plan;
  const cover = [...new Set([...words.filter((_, i) => i % 3 === 0), words[words.length - 1]!])];
  const res = await searchIndex(deps, quote(cover.join(' ')), {
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
  const cmp = compareStrings;
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
