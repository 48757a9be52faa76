import { describe, expect, it } from 'vitest';
import { boundHeapGrowth } from '../bin/commands/worker.js';

/**
 * The worker bounds how far V8 grows its heaps past their live size (bin/commands/worker.ts); the
 * effect on an import's peak RSS is measured by `npm run bench:import` (docs/imports.md).
 */
describe('worker heap growth', () => {
  it('is bounded unless node was given its own --heap-growing-percent', () => {
    expect(boundHeapGrowth(['--heap-growing-percent=20'])).toBe(false);
    expect(boundHeapGrowth(['--enable-source-maps', '--heap_growing_percent=20'])).toBe(false);
    expect(boundHeapGrowth(['--max-old-space-size=512'])).toBe(true);
  });
});
