import { describe, expect, it } from 'vitest';
import { parseServerTiming, SearchTiming } from '../search/search-timing.js';

const resolveAfter = <T>(ms: number, value: T) =>
  new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe('SearchTiming', () => {
  it('counts overlapping search index calls once in engine time, and sums their own processing time', async () => {
    const timing = new SearchTiming();
    const started = performance.now();
    await Promise.all([
      timing.engine(() => resolveAfter(60, { processingTimeMs: 7 })),
      timing.engine(() => resolveAfter(60, { processingTimeMs: 5 })),
    ]);
    await timing.engine(() => resolveAfter(30, { processingTimeMs: 2 }));
    const wall = performance.now() - started;
    expect(timing.engineCalls).toBe(3);
    expect(timing.engineSelfMs).toBe(14);
    // Two calls at once, then one: about 90 ms in flight, not the 150 ms their round trips add up to.
    expect(timing.engineMs).toBeGreaterThanOrEqual(85);
    expect(timing.engineMs).toBeLessThanOrEqual(wall + 1);
    expect(timing.engineSlowestMs).toBeGreaterThanOrEqual(55);
    expect(timing.engineSlowestMs).toBeLessThan(timing.engineMs);
  });

  it('times a call that fails, and passes its error on', async () => {
    const timing = new SearchTiming();
    await expect(
      timing.engine(() => resolveAfter(5, null).then(() => Promise.reject(new Error('down')))),
    ).rejects.toThrow('down');
    await expect(timing.db(() => Promise.reject(new Error('gone')))).rejects.toThrow('gone');
    expect(timing.engineCalls).toBe(1);
    expect(timing.engineMs).toBeGreaterThan(0);
    expect(timing.dbCalls).toBe(1);
  });

  it('writes a Server-Timing value that reads back: neutral for everyone, detailed for operators', async () => {
    const timing = new SearchTiming();
    await timing.engine(() => resolveAfter(5, { processingTimeMs: 3 }));
    await timing.db(() => resolveAfter(5, []));
    const header = timing.header(42.25);
    expect(header).toMatch(/^db;dur=[\d.]+, search;dur=[\d.]+, total;dur=42\.3$/);
    const parsed = parseServerTiming(header);
    expect(parsed.search).toBeGreaterThan(0);
    expect(parsed.db).toBeGreaterThan(0);
    const detailed = timing.detailedHeader(42.25);
    expect(detailed).toContain('search;dur=');
    expect(detailed).toContain('desc="1 calls"');
    expect(detailed).toContain('desc="1 reads"');
    expect(parseServerTiming(detailed)).toMatchObject({ 'search-self': 3, total: 42.3 });
    expect(parseServerTiming(detailed)['search-slowest']).toBeGreaterThan(0);
    expect(parseServerTiming(undefined)).toEqual({});
    expect(parseServerTiming('cache;desc=hit, app;dur=1.5')).toEqual({ app: 1.5 });
  });
});
