import { type IndexDeps, orgIn, searchIndex } from './index-calls.js';
import { type Keyed, type KeyedOrder, keyedHits } from './sort-rules.js';

/**
 * True suspects merged into a page here instead of asking Meilisearch again. When a term's suspects
 * hold true matches, the exact answer is the unchecked candidates' plus those few, and the page
 * asked for while the suspects were checked (`guess`) started MERGE_BUDGET positions early: every
 * true suspect that sorts before the page shifts it by one, and as long as at most MERGE_BUDGET do,
 * the page is the merge of the guess's hits and the true suspects. Otherwise the exact query is
 * asked. True suspects cluster (many share a common phrase that sorts before a deep page): the
 * budget is sized to place such pages without the exact query, at no measurable cost on the guess
 * (docs/benchmarks.md).
 */
export const MERGE_BUDGET = 200;

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

/**
 * The page's hits with the key their order needs, read by id: a filter on `d` without a sort, far
 * cheaper than the exact sorted query deep in a large set.
 */
export async function keyedPage(
  deps: IndexDeps,
  ids: readonly number[],
  field: 'n' | 'u' | null,
): Promise<Keyed[] | null> {
  if (field === null || ids.length === 0)
    return keyedHits(
      ids.map((id) => ({ id })),
      [],
    );
  const res = await searchIndex(deps, '', {
    filter: [orgIn(ids)],
    limit: ids.length,
    attributesToRetrieve: ['id', field],
  });
  const byId = new Map(res.hits.map((h) => [Number(h.id), h]));
  // In the page's order; an id the filter no longer finds (just deleted) cannot be placed.
  const hits = ids.map((id) => byId.get(id));
  return hits.every((h) => h !== undefined) ? keyedHits(hits, [field]) : null;
}
