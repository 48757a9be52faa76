import { bizdirUid } from '../shared/domains.js';
import type { OrgSort } from './search-query.js';

/**
 * The orders an answer comes in: Meilisearch's sort rules for each, and the same orders over the
 * exact keys here, for the pages merged outside Meilisearch (merge-checked.ts, small-answer.ts).
 */

/** Byte order of two strings, as Meilisearch compares the facet values of these ASCII keys. */
export const compareStrings = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The orders the index sorts by: each sort but `relevance`, which is tiers, each by stable domain. */
export type IndexOrder = Exclude<OrgSort, 'relevance'> | 'byDomain';

/**
 * Each order's keys (org-document.ts): the first characters of the name key (`n1`) and of the stable
 * domain (`d1`) are sorted on before the buckets (`np`, `db`), and the buckets before the exact keys,
 * so a deep page skips whole letters, then whole buckets, before it walks exact values. `updated`
 * splits a group of equal `updated` by `ua` (`ud` descending), `updated` and the stable domain's
 * bucket in one number: Meilisearch starts that rule once for every group the page reaches, and a
 * start of `db` reads most of its facet tree (org-document.ts updatedThenBucket).
 */
export const SORT_RULES: Record<IndexOrder, string[]> = {
  name: ['n1:asc', 'np:asc', 'n:asc', 'd:asc'],
  '-name': ['n1:desc', 'np:desc', 'n:desc', 'd:asc'],
  updated: ['u:asc', 'ua:asc', 'd:asc'],
  '-updated': ['u:desc', 'ud:desc', 'd:asc'],
  byDomain: ['d1:asc', 'db:asc', 'd:asc'],
};

/** An Org with the exact keys of every order (the displayed `n`, `d`, `u`). */
export interface Keyed {
  id: number;
  n: string;
  d: string;
  u: number;
}

export type KeyedOrder = (a: Keyed, b: Keyed) => number;

/**
 * Meilisearch's orders on the exact keys (SORT_RULES: a bucket is a prefix of its key, cut at a width
 * that depends only on characters it keeps, `db` and `d1` of `d`, `ua` and `ud` of `u` and `db`, so
 * none changes the order).
 */
export const KEYED_ORDERS: Record<IndexOrder, KeyedOrder> = {
  name: (a, b) => compareStrings(a.n, b.n) || compareStrings(a.d, b.d),
  '-name': (a, b) => compareStrings(b.n, a.n) || compareStrings(a.d, b.d),
  updated: (a, b) => a.u - b.u || compareStrings(a.d, b.d),
  '-updated': (a, b) => b.u - a.u || compareStrings(a.d, b.d),
  byDomain: (a, b) => compareStrings(a.d, b.d),
};

/** The key an order needs from the documents besides `d`, which is computed from the id. */
export const KEY_FIELD: Record<IndexOrder, 'n' | 'u' | null> = {
  name: 'n',
  '-name': 'n',
  updated: 'u',
  '-updated': 'u',
  byDomain: null,
};

/**
 * Hits as Keyed (`d` from the id, `bizdirUid`), or null when one lacks a key of `need`. A key not
 * read is left empty: the order does not use it.
 */
export function keyedHits(
  hits: readonly Record<string, unknown>[],
  need: readonly ('n' | 'u')[],
): Keyed[] | null {
  const out: Keyed[] = [];
  for (const h of hits) {
    if (need.includes('n') && typeof h.n !== 'string') return null;
    if (need.includes('u') && typeof h.u !== 'number') return null;
    const id = Number(h.id);
    out.push({ id, n: typeof h.n === 'string' ? h.n : '', d: bizdirUid(id), u: Number(h.u ?? 0) });
  }
  return out;
}
