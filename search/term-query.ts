import { type IndexDeps, orgIn, quote, readAll } from './index-calls.js';
import { decodeNameKey, planTerm, termMatches } from './name-text.js';
import { type Keyed, keyedHits } from './sort-rules.js';

/**
 * A term as a Meilisearch query over the names' trigram words (name-text.ts). The answer of that
 * query can hold a few false candidates; they all carry one of the term's links, so they are found
 * with one filtered query, checked against the names their documents hold (decoded from the sort
 * key `n`), and the final query keeps "no link of this term, or checked and true". Every total and
 * every page is then exact, and Meilisearch does the sorting and paging.
 */

/** A Meilisearch query (text and filters) whose answer is exactly the names matching a term. */
export interface Resolved {
  q: string;
  filters: string[];
  /**
   * The suspects found true, with their keys: the Orgs `filters` adds to the unchecked query's
   * answer. Absent when there were none.
   */
  truly?: Keyed[];
}

/**
 * The query for "the name contains the folded term", in two steps: `unchecked` is the query of the
 * candidates that carry none of the term's links (exact matches, no check needed), known at once;
 * `resolved` reads the suspects, checks them against their own names and gives the exact query.
 */
export interface TermQuery {
  unchecked: Resolved;
  resolved: Promise<Resolved>;
  /** True when the term can have no suspects, so `unchecked` is the exact query. */
  exact: boolean;
}

export function termQuery(deps: IndexDeps, folded: string): TermQuery {
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
