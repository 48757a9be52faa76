import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { slugify, slugWithClash } from '../../shared/domains.js';
import { registrarCsv, registrarFields } from './registrar-csv.js';
import { below, rng } from './rng.js';

/**
 * A register run in parts whose company names clash a lot (`JUNIPER PEAK BREWING LLP`, and names
 * whose plain label is another's clash label, `JUNIPER PEAK BREWING LLP 2`), in the real format, with
 * company numbers in no particular order in the file and some companies twice (the later row wins,
 * sometimes with another name). `expected` is what the rule in docs/decisions.md (Public labels) gives
 * into an empty database: turns by base (byte order), then in the order of each company's winning
 * row (part, then line), each the first free `base`, `base-2`, ... above its base's last number.
 */
const CLASHING = [
  'JUNIPER PEAK BREWING LLP',
  'JUNIPER PEAK BREWING LLP 2',
  'JUNIPER PEAK BREWING LLP 3',
  'Juniper Peak Brewing, LLP',
  'HARBOUR LIGHT LTD',
  'HARBOUR LIGHT LTD 2',
  'ACME LTD',
  'ACME LTD 4',
  'ACME LTD-2',
  'QUAY STORES LIMITED',
];

export interface ClashingRegister {
  files: string[];
  /** Public label by company number, as the rule gives it into an empty database. */
  expected: Map<string, string>;
}

export function clashingRegister(
  dir: string,
  prefix: string,
  parts: number,
  perPart: number,
): ClashingRegister {
  const random = rng(4242 + parts * 31 + perPart);
  const names = [
    ...CLASHING,
    ...Array.from({ length: Math.ceil(perPart / 20) }, (_, i) => `COMMON NAME ${i} LTD`),
  ];
  const total = parts * perPart;
  // Company numbers shuffled, so the order of the rows is not the order of the numbers.
  const numbers = Array.from({ length: total }, (_, i) => String(7_000_000 + i).padStart(8, '0'));
  for (let i = numbers.length - 1; i > 0; i--) {
    const j = below(random, i + 1);
    [numbers[i], numbers[j]] = [numbers[j]!, numbers[i]!];
  }
  const rows: { number: string; name: string }[][] = [];
  for (let p = 0; p < parts; p++) {
    const part = numbers
      .slice(p * perPart, (p + 1) * perPart)
      .map((number) => ({ number, name: names[below(random, names.length)]! }));
    // Some companies of an earlier part again (the later row wins), half of them under another name.
    if (p > 0)
      for (let k = 0; k < perPart / 25; k++) {
        const again = rows[below(random, p)]![below(random, perPart)]!;
        const at = below(random, part.length);
        const name = k % 2 === 0 ? again.name : names[below(random, names.length)]!;
        part.splice(at, 0, { number: again.number, name });
      }
    rows.push(part);
  }
  const files = rows.map((part, p) => {
    const file = path.join(dir, `${prefix}-${p + 1}.csv`);
    writeFileSync(file, registrarCsv(part.map((r) => registrarFields(r.number, r.name))));
    return file;
  });
  // The winning row of each company (the last), then the turns by base, then in the order of those rows.
  const winner = new Map<string, { name: string; part: number; line: number }>();
  rows.forEach((part, p) => {
    part.forEach((r, line) => {
      winner.set(r.number, { name: r.name, part: p, line });
    });
  });
  const byte = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const turns = [...winner].sort(
    ([, a], [, b]) => byte(slugify(a.name), slugify(b.name)) || a.part - b.part || a.line - b.line,
  );
  const last = new Map<string, number>();
  const given = new Set<string>();
  const expected = new Map<string, string>();
  for (const [number, { name }] of turns) {
    const base = slugify(name);
    let n = (last.get(base) ?? 0) + 1;
    while (given.has(slugWithClash(base, n))) n++;
    const label = slugWithClash(base, n);
    last.set(base, n);
    given.add(label);
    expected.set(number, label);
  }
  return { files, expected };
}
