import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import { companyNumber, generateNextMonth, generateRegister, isGone } from '../bench/register/generate.js';
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

/** A generated file's rows by column (the register's header has spaces after its commas). */
function readRows(file: string): Record<string, string>[] {
  const parsed = Papa.parse<Record<string, string>>(readFileSync(file, 'utf8').trim(), {
    header: true,
    transformHeader: (h) => h.trim(),
  });
  expect(parsed.errors).toEqual([]);
  return parsed.data;
}

describe('bench register generator: the next month', () => {
  it('drops, adds, renames and moves the companies it says, and names every Org once the month is imported', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bizdir-next-month-'));
    try {
      const orgs = 3_000;
      const reg = await generateRegister({ orgs, parts: 3, dir });
      const month = await generateNextMonth(reg, 3);
      const before = readFileSync(reg.namesFile, 'utf8').split('\n').filter(Boolean);
      const after = readFileSync(month.namesAfterFile, 'utf8').split('\n').filter(Boolean);
      const rows = month.files.flatMap(readRows);
      const { counts } = month;
      expect(counts.gone).toBe(30);
      expect(counts.added).toBe(36);
      expect(rows.length).toBe(counts.rows);
      expect(counts.rows).toBe(orgs - counts.gone + counts.added);
      expect(after.length).toBe(orgs + counts.added);
      expect(new Set(after).size).toBe(after.length);
      const byNumber = new Map(rows.map((r) => [r.CompanyNumber!, r]));
      let renamed = 0;
      let moved = 0;
      const original = new Map(reg.files.flatMap(readRows).map((r) => [r.CompanyNumber!, r]));
      for (let i = 1; i <= orgs + counts.added; i++) {
        const row = byNumber.get(companyNumber(i));
        if (i <= orgs && isGone(i)) {
          expect(row, `${i} is gone`).toBeUndefined();
          expect(after[i - 1]).toBe(before[i - 1]);
          continue;
        }
        expect(row?.CompanyName, `row ${i}`).toBe(after[i - 1]);
        if (i > orgs) continue;
        if (after[i - 1] !== before[i - 1]) renamed++;
        if (row!['RegAddress.AddressLine1'] !== original.get(companyNumber(i))!['RegAddress.AddressLine1'])
          moved++;
      }
      expect(renamed).toBe(counts.renamed);
      expect(renamed).toBeGreaterThan(0);
      expect(moved).toBe(counts.moved);
      expect(moved).toBeGreaterThan(0);
      // Cached: a second call reads what the first wrote.
      expect((await generateNextMonth(reg, 3)).counts).toEqual(counts);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
