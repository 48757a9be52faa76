import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { REGISTRAR_HEADER_LINE } from '../ingest/registrar/registrar.parser.js';
import { registrarFields, registrarLine } from '../test/support/registrar-csv.js';
import { TOWNS } from './register/generate.js';
import { NameGenerator } from './register/names.js';

/**
 * Writes N register rows in the real format (real header, every field quoted), varied like the real
 * file: suffix forms, prefixes, None Supplied, 4-digit SIC codes, foreign and empty countries, the odd
 * impossible date. `changeEvery`: every n-th row gets a new post town (the "10% changed" file).
 */
const WORDS = [
  'ACME',
  'NORTHERN',
  'HARBOUR',
  'GLEN',
  'OAK',
  'RIVERSIDE',
  'PENNINE',
  'ZENITH',
  'CASTLE',
  'BRIGHT',
  'ROYAL',
  'DIGITAL',
  'GREEN',
  'SILVER',
  'ATLAS',
  'CEDAR',
];
const PREFIXES = ['', '', '', '', '', 'SC', 'NI', 'OC', 'SL', 'FC'];
const COUNTRIES = [
  'ENGLAND',
  'UNITED KINGDOM',
  '',
  '',
  'SCOTLAND',
  'WALES',
  'NORTHERN IRELAND',
  'ENGLAND',
  'GERMANY',
  'GUERNSEY',
];
const SICS = [
  '62020 - Information technology consultancy activities',
  'None Supplied',
  '9999 - Dormant company',
  '68209 - Other letting and operating of own or leased real estate',
  '47910 - Retail sale via mail order houses or via Internet',
];

/**
 * Row `i`'s company number: 8 characters, unique. A prefixed number (`SC` and the like, one slot of
 * PREFIXES each) counts the rows of its own slot, so its six digits last to 10M rows; until
 * 2026-11-28 it took `i` itself, which from row 1,000,000 on made 9-character numbers that the
 * import rightly refused (2.35M of 5.7M rows).
 */
export function numberOf(i: number): string {
  const prefix = PREFIXES[i % PREFIXES.length]!;
  const digits = 8 - prefix.length;
  const n = prefix === '' ? i : Math.floor(i / PREFIXES.length);
  if (n >= 10 ** digits) throw new RangeError(`row ${i}: no ${digits}-digit number left after "${prefix}"`);
  return prefix + String(n).padStart(digits, '0');
}

/**
 * Row `i` of the generated register. `name` comes from namesOf (the register's shapes, a vocabulary
 * that grows with the register), the same for row `i` in every file of one size.
 */
export function rowOf(i: number, changed: boolean, name: string): string {
  return registrarLine(
    registrarFields(numberOf(i), name, {
      'RegAddress.AddressLine1': `${(i % 200) + 1}, ${WORDS[(i >> 3) % 16]} STREET`,
      'RegAddress.PostTown': changed ? `NEW ${TOWNS[i % TOWNS.length]}` : TOWNS[i % TOWNS.length]!,
      'RegAddress.Country': COUNTRIES[(i >> 2) % 10]!,
      'RegAddress.PostCode': `AB${i % 90} ${i % 9}CD`,
      IncorporationDate: i % 5000 === 7 ? '31/02/2019' : `${(i % 28) + 1}/${(i % 12) + 1}/${1950 + (i % 75)}`,
      'SICCode.SicText_1': SICS[i % 5]!,
      CompanyStatus: i % 13 === 0 ? 'Active - Proposal to Strike off' : 'Active',
    }),
  );
}

/** The names of a register of `n` companies, in row order (deterministic: seed 1). */
export function namesOf(n: number): () => string {
  const gen = new NameGenerator(1, n);
  return () => gen.next();
}

export async function writeRegistrarFile(file: string, n: number, changeEvery = 0): Promise<void> {
  const nextName = namesOf(n);
  const out = createWriteStream(file, { highWaterMark: 1 << 20 });
  out.write(`${REGISTRAR_HEADER_LINE}\n`);
  let chunk: string[] = [];
  for (let i = 1; i <= n; i++) {
    chunk.push(rowOf(i, changeEvery > 0 && i % changeEvery === 0, nextName()));
    if (chunk.length === 1000 || i === n) {
      if (!out.write(`${chunk.join('\n')}\n`)) await once(out, 'drain');
      chunk = [];
    }
  }
  out.end();
  await once(out, 'finish');
}
