import { describe, expect, it } from 'vitest';
import { heapGrowthGivenToNode } from '../bin/commands/worker.js';

/**
 * The worker bounds how far V8 grows its heaps past their live size (bin/commands/worker.ts); the
 * effect on an import's peak RSS is measured by `npm run bench:import` (docs/imports.md).
 */
describe('worker heap growth', () => {
  it('is bounded unless node was given its own --heap-growing-percent', () => {
    // Only reads the arguments: the test runner's own heap is left as it is.
    expect(heapGrowthGivenToNode(['--heap-growing-percent=20'])).toBe(true);
    expect(heapGrowthGivenToNode(['--enable-source-maps', '--heap_growing_percent=20'])).toBe(true);
    expect(heapGrowthGivenToNode(['--max-old-space-size=512'])).toBe(false);
    expect(heapGrowthGivenToNode([])).toBe(false);
  });
});
