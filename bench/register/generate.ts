import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REGISTRAR_HEADER_LINE } from '../../ingest/registrar/registrar.parser.js';
import { registrarFields, registrarLine } from '../../test/support/registrar-csv.js';
import { NameGenerator } from './names.js';

/**
 * A generated company register in the real 55-column format (real header, every field quoted),
 * written as one file or as parts like the registrar publishes (`…-part1_7.csv`). The names are
 * kept too (`names.txt`, one per line, in company-number order) for brute-force checks.
 *
 *   npm run gen:register -- --orgs 5700000 --parts 7 [--out /tmp/bizdir-register]
 */
export interface Register {
  dir: string;
  files: string[];
  namesFile: string;
  orgs: number;
}

export const TOWNS = [
  'LONDON',
  'LEEDS',
  'BRISTOL',
  'GLASGOW',
  'BELFAST',
  'CARDIFF',
  'YORK',
  'HULL',
  'BATH',
  'DERBY',
  'TRURO',
  'INVERNESS',
];
const STREETS = [
  'HIGH STREET',
  'STATION ROAD',
  'CHURCH LANE',
  'MILL ROAD',
  'THE GREEN',
  'KING STREET',
  'PARK AVENUE',
];
const CATEGORIES = [
  'Private Limited Company',
  'Private Limited Company',
  'Private Limited Company',
  "PRI/LBG/NSC (Private, Limited by guarantee, no share capital, use of 'Limited' exemption)",
  'Limited Liability Partnership',
  'Public Limited Company',
];
const PREFIXES = ['', '', '', '', '', '', 'SC', 'NI', 'OC', 'SL'];

/**
 * Eight characters like the register's: `01234567`, or two letters and six digits (`SC012345`).
 * Unique up to 10 million companies: a prefix is tied to `i % 10`, so `i / 10` fits six digits.
 */
export function companyNumber(i: number): string {
  const prefix = PREFIXES[i % PREFIXES.length]!;
  if (prefix === '') return String(i).padStart(8, '0');
  return prefix + String(Math.floor(i / PREFIXES.length)).padStart(6, '0');
}

function row(i: number, name: string): string {
  return registrarLine(
    registrarFields(companyNumber(i), name, {
      'RegAddress.AddressLine1': `${(i % 240) + 1} ${STREETS[i % STREETS.length]}`,
      'RegAddress.AddressLine2': i % 3 === 0 ? `UNIT ${i % 40}` : '',
      'RegAddress.PostTown': TOWNS[(i >> 2) % TOWNS.length]!,
      'RegAddress.PostCode': `${String.fromCharCode(65 + (i % 26))}${String.fromCharCode(65 + ((i >> 5) % 26))}${i % 99} ${i % 9}${String.fromCharCode(65 + ((i >> 3) % 26))}${String.fromCharCode(65 + ((i >> 7) % 26))}`,
      CompanyCategory: CATEGORIES[i % CATEGORIES.length]!,
      CompanyStatus: i % 17 === 0 ? 'Active - Proposal to Strike off' : 'Active',
      IncorporationDate: `${String((i % 28) + 1).padStart(2, '0')}/${String((i % 12) + 1).padStart(2, '0')}/${1960 + (i % 65)}`,
      'SICCode.SicText_1':
        i % 11 === 0 ? 'None Supplied' : `${62000 + (i % 900)} - Generated activity ${i % 900}`,
    }),
  );
}

export async function generateRegister(opts: {
  orgs: number;
  parts: number;
  dir: string;
  seed?: number;
}): Promise<Register> {
  const dir = path.join(opts.dir, `register-${opts.orgs}-${opts.parts}p-s${opts.seed ?? 1}`);
  const files = Array.from({ length: opts.parts }, (_, p) =>
    path.join(
      dir,
      opts.parts === 1
        ? 'BasicCompanyData-2026-11-01.csv'
        : `BasicCompanyData-2026-11-01-part${p + 1}_${opts.parts}.csv`,
    ),
  );
  const namesFile = path.join(dir, 'names.txt');
  const done = path.join(dir, 'complete');
  if (existsSync(done) && readFileSync(done, 'utf8') === String(opts.orgs))
    return { dir, files, namesFile, orgs: opts.orgs };
  mkdirSync(dir, { recursive: true });
  const gen = new NameGenerator(opts.seed ?? 1, opts.orgs);
  const names = createWriteStream(`${namesFile}.tmp`, { highWaterMark: 1 << 20 });
  const perPart = Math.ceil(opts.orgs / opts.parts);
  let i = 1;
  for (const file of files) {
    const out = createWriteStream(`${file}.tmp`, { highWaterMark: 1 << 20 });
    out.write(`${REGISTRAR_HEADER_LINE}\n`);
    const last = Math.min(opts.orgs, i + perPart - 1);
    let chunk: string[] = [];
    let nameChunk: string[] = [];
    for (; i <= last; i++) {
      const name = gen.next();
      chunk.push(row(i, name));
      nameChunk.push(name);
      if (chunk.length === 2000 || i === last) {
        if (!out.write(`${chunk.join('\n')}\n`)) await once(out, 'drain');
        if (!names.write(`${nameChunk.join('\n')}\n`)) await once(names, 'drain');
        chunk = [];
        nameChunk = [];
      }
    }
    out.end();
    await once(out, 'finish');
    renameSync(`${file}.tmp`, file);
  }
  names.end();
  await once(names, 'finish');
  renameSync(`${namesFile}.tmp`, namesFile);
  writeFileSync(done, String(opts.orgs));
  return { dir, files, namesFile, orgs: opts.orgs };
}

/** Distinct words and mean length of the generated names (printed by the benchmark). */
export function describeNames(names: readonly string[]): { distinctWords: number; meanLength: number } {
  const words = new Set<string>();
  let chars = 0;
  for (const n of names) {
    chars += n.length;
    for (const w of n.split(' ')) words.add(w);
  }
  return { distinctWords: words.size, meanLength: chars / Math.max(1, names.length) };
}

async function main() {
  const args = process.argv.slice(2);
  const arg = (name: string, fallback: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1]! : fallback;
  };
  const reg = await generateRegister({
    orgs: Number(arg('orgs', '1000000')),
    parts: Number(arg('parts', '1')),
    dir: arg('out', '/tmp/bizdir-register'),
  });
  const names = readFileSync(reg.namesFile, 'utf8').split('\n').filter(Boolean);
  const d = describeNames(names);
  console.log(
    JSON.stringify(
      { ...reg, distinctWords: d.distinctWords, meanLength: Number(d.meanLength.toFixed(1)) },
      null,
      2,
    ),
  );
}

if (process.argv[1]?.endsWith('generate.ts')) await main();
