import { describe, expect, it } from 'vitest';
import { MERGE_BUDGET, mergeTrue } from '../search/merge-checked.js';
import { below, rng } from './support/rng.js';

/**
 * mergeTrue places a term's few true suspects into a page of the other candidates asked for
 * MERGE_BUDGET positions early. Checked against the whole order, built by brute force, over random
 * sets, pages and suspects, in every order of the keys: whenever it answers, the answer is the
 * page; and it answers whenever no more than the budget of suspects sort before the page.
 */
interface Keyed {
  id: number;
  n: string;
  d: string;
  u: number;
}
const cmpStr = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const orders: Record<string, (a: Keyed, b: Keyed) => number> = {
  name: (a, b) => cmpStr(a.n, b.n) || cmpStr(a.d, b.d),
  '-name': (a, b) => cmpStr(b.n, a.n) || cmpStr(a.d, b.d),
  updated: (a, b) => a.u - b.u || cmpStr(a.d, b.d),
  '-updated': (a, b) => b.u - a.u || cmpStr(a.d, b.d),
  byDomain: (a, b) => cmpStr(a.d, b.d),
};

/** An integer in [0, n) from the seeded generator (support/rng.ts). */
function ints(seed: number) {
  const random = rng(seed);
  return (n: number) => below(random, n);
}

describe('mergeTrue', () => {
  it('gives the page of the whole order whenever it answers, and answers within the budget', () => {
    const rand = ints(42);
    let answered = 0;
    let declined = 0;
    for (let round = 0; round < 3000; round++) {
      const size = 1 + rand(120);
      // Few distinct names and times, so ties are broken by the stable domain.
      const all: Keyed[] = Array.from({ length: size }, (_, i) => ({
        id: i + 1,
        n: `n${rand(12)}`,
        d: `${(1000 + rand(9000)).toString(36)}${i.toString(36)}`,
        u: rand(5) * 1000,
      }));
      const trueCount = rand(4) === 0 ? rand(size) : rand(Math.min(size, 6));
      const isTrue = new Set<number>();
      while (isTrue.size < trueCount) isTrue.add(1 + rand(size));
      const name = Object.keys(orders)[rand(5)]!;
      const cmp = orders[name]!;
      const whole = [...all].sort(cmp);
      const others = whole.filter((k) => !isTrue.has(k.id));
      const truly = all.filter((k) => isTrue.has(k.id));
      const limit = 1 + rand(25);
      const offset = rand(size + 5);
      // Asked early by MERGE_BUDGET or less, so that some pages cannot be placed.
      const from = Math.max(0, offset - rand(Math.min(MERGE_BUDGET, 30) + 1));
      const asked = limit + (offset - from);
      const hits = others.slice(from, from + asked);
      const got = mergeTrue(hits, from, truly, offset, limit, cmp);
      const want = whole.slice(offset, offset + limit).map((k) => k.id);
      if (got === null) {
        declined++;
        // Declining is allowed only when the hits cannot place the page: the first hit sorts after
        // the page's start (more true suspects before it than it was asked early), or there is none.
        const firstHit = hits.length > 0 ? whole.indexOf(hits[0]!) : -1;
        expect(from > 0 && (hits.length === 0 || firstHit > offset)).toBe(true);
      } else {
        answered++;
        expect(got, `${name} offset ${offset} limit ${limit}`).toEqual(want);
      }
    }
    expect(answered).toBeGreaterThan(2000);
    expect(declined).toBeGreaterThan(0);
  });

  it('declines when more true suspects sort before the page than it was asked early', () => {
    const keyed = (id: number): Keyed => ({ id, n: 'x', d: id.toString(36).padStart(4, '0'), u: 0 });
    const truly = [1, 2, 3].map(keyed);
    const others = Array.from({ length: 50 }, (_, i) => keyed(i + 10));
    // Asked 2 early, but all three true suspects sort before the page.
    expect(mergeTrue(others.slice(18, 40), 18, truly, 20, 20, orders.byDomain!)).toBeNull();
    // Asked 3 early: exact.
    const whole = [...truly, ...others];
    expect(mergeTrue(others.slice(17, 40), 17, truly, 20, 20, orders.byDomain!)).toEqual(
      whole.slice(20, 40).map((k) => k.id),
    );
  });
});
