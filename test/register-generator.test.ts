import { describe, expect, it } from 'vitest';
import { companyNumber } from '../bench/register/generate.js';
import { normalizeCompanyNumber } from '../ingest/registrar/registrar.normalize.js';

describe('bench register generator: company numbers', () => {
  it('are valid register numbers and unique over the whole register size (5.7M) and beyond', () => {
    const seen = new Set<string>();
    // Every number around the places where a digit count changes, and a stride over 10 million.
    const sample = new Set([
      ...Array.from({ length: 2_000 }, (_, k) => 999_000 + k),
      ...Array.from({ length: 2_000 }, (_, k) => 5_699_000 + k),
      ...Array.from({ length: 20_000 }, (_, k) => 1 + k * 499),
      9_999_999,
    ]);
    for (const i of sample) {
      const n = companyNumber(i);
      expect(n).toMatch(/^([A-Z]{2}\d{6}|\d{8})$/);
      expect(normalizeCompanyNumber(n)).toBe(n);
      expect(seen.has(n), `${i} -> ${n} repeats`).toBe(false);
      seen.add(n);
    }
  });
});
