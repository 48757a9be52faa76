import { describe, expect, it } from 'vitest';
import { mergePage } from '../search/fresh-changes.js';
import { rng } from './support/rng.js';

/**
 * mergePage against a plain merge: the index's answer A (without the fresh Orgs) and the fresh
 * matches B, both sorted; only the window of A that the search asks Meilisearch for is given.
 */
type Key = [string, string];
const key = (n: number): Key => [n.toString(36).padStart(4, '0'), ''];

describe('mergePage', () => {
  it('gives every page of the merged order, with the total, from the window it asks for', () => {
    const rand = rng(5);
    let cases = 0;
    for (let round = 0; round < 3000; round++) {
      const aSize = Math.floor(rand() * (rand() < 0.3 ? 4 : 60));
      const bSize = Math.floor(rand() * (rand() < 0.5 ? 3 : 12));
      // Distinct keys (the real orders are total: they end on the stable domain).
      const pool = [...Array(aSize + bSize).keys()].map((i) => ({
        id: i + 1,
        k: Math.floor(rand() * 1000) * 100 + i,
      }));
      const a = pool.slice(0, aSize).sort((x, y) => x.k - y.k);
      const b = pool.slice(aSize).sort((x, y) => x.k - y.k);
      const merged = [...a, ...b].sort((x, y) => x.k - y.k).map((x) => x.id);
      const total = aSize + bSize;
      const offset = Math.floor(rand() * (total + 3));
      const limit = Math.floor(rand() * 25);
      const from = Math.max(0, offset - bSize);
      const window = a.slice(from, from + limit + (offset - from));
      const page = mergePage(
        { offset, limit },
        from,
        { ids: window.map((x) => x.id), total: aSize },
        window.map((x) => key(x.k)),
        b.map((x) => ({ id: x.id, key: key(x.k) })),
      );
      expect(page.total).toBe(total);
      expect(page.ids).toEqual(merged.slice(offset, offset + limit));
      cases++;
    }
    expect(cases).toBe(3000);
  });
});
