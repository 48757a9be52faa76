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

/** How a company's row differs in the next month's file (generateNextMonth). */
interface RowChange {
  /** A new registered office. */
  moved?: boolean;
  /** A confirmation statement filed: its two dates move on a year (columns the import does not keep). */
  confirmed?: boolean;
}

function row(i: number, name: string, change: RowChange = {}): string {
  return registrarLine(
    registrarFields(companyNumber(i), name, {
      'RegAddress.AddressLine1': change.moved
        ? `${(i % 97) + 2} ${STREETS[(i + 3) % STREETS.length]} WEST`
        : `${(i % 240) + 1} ${STREETS[i % STREETS.length]}`,
      ...(change.confirmed
        ? { ConfStmtNextDueDate: '28/03/2027', ConfStmtLastMadeUpDate: '14/03/2026' }
        : {}),
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

/**
 * The same register a month later, as the registrar publishes it (the whole snapshot again, in as
 * many parts): about 1 % of the companies gone (dissolved), 1.2 % new ones (new numbers after the
 * last, new names), 0.14 % renamed, 2 % with a new registered office, and 8.3 % whose confirmation
 * statement dates moved on (columns the import reads but does not keep, so those rows are changed
 * text with unchanged content). Rates chosen to be of the size of the real register's monthly
 * churn (about 60-70K incorporations and 50-60K dissolutions a month on 5.7M companies). Beside the
 * files, `names-after.txt`: every Org's name once the month is imported, gone ones included (a
 * company that left the register is kept and stays searchable), in company-number order.
 */
export interface NextMonth {
  files: string[];
  namesAfterFile: string;
  counts: { rows: number; gone: number; added: number; renamed: number; moved: number; confirmed: number };
}

export const isGone = (i: number) => i % 100 === 37;
const isRenamed = (i: number) => i % 700 === 11;
const isMoved = (i: number) => i % 50 === 3;
const isConfirmed = (i: number) => i % 12 === 5;

export async function generateNextMonth(reg: Register, parts: number): Promise<NextMonth> {
  const dir = path.join(reg.dir, 'next-month');
  const files = Array.from({ length: parts }, (_, p) =>
    path.join(
      dir,
      parts === 1
        ? 'BasicCompanyData-2026-12-01.csv'
        : `BasicCompanyData-2026-12-01-part${p + 1}_${parts}.csv`,
    ),
  );
  const namesAfterFile = path.join(dir, 'names-after.txt');
  const countsFile = path.join(dir, 'complete');
  if (existsSync(countsFile))
    return {
      files,
      namesAfterFile,
      counts: JSON.parse(readFileSync(countsFile, 'utf8')) as NextMonth['counts'],
    };
  mkdirSync(dir, { recursive: true });
  const before = readFileSync(reg.namesFile, 'utf8').split('\n').filter(Boolean);
  if (before.length !== reg.orgs)
    throw new Error(`${reg.namesFile}: ${before.length} names for ${reg.orgs} Orgs`);
  // New names from another seed over the same vocabulary, none equal to a name already registered.
  const gen = new NameGenerator(2, reg.orgs);
  gen.avoid(before);
  const added = Math.ceil(reg.orgs * 0.012);
  const after = [...before];
  const counts = { rows: 0, gone: 0, added, renamed: 0, moved: 0, confirmed: 0 };
  // The names first (renames, then the new companies: the generator's order), then the rows, streamed.
  for (let i = 1; i <= reg.orgs; i++) {
    if (isGone(i)) counts.gone++;
    else if (isRenamed(i)) {
      after[i - 1] = gen.next();
      counts.renamed++;
    }
  }
  for (let k = 0; k < added; k++) after.push(gen.next());
  counts.rows = reg.orgs - counts.gone + added;
  const perPart = Math.ceil(counts.rows / parts);
  let part = -1;
  let inPart = perPart;
  let out: ReturnType<typeof createWriteStream> | undefined;
  let chunk: string[] = [];
  const flush = async () => {
    if (chunk.length > 0 && !out!.write(`${chunk.join('\n')}\n`)) await once(out!, 'drain');
    chunk = [];
  };
  const close = async () => {
    if (!out) return;
    await flush();
    out.end();
    await once(out, 'finish');
    renameSync(`${files[part]!}.tmp`, files[part]!);
  };
  for (let i = 1; i <= reg.orgs + added; i++) {
    if (i <= reg.orgs && isGone(i)) continue;
    if (inPart === perPart) {
      await close();
      part++;
      inPart = 0;
      out = createWriteStream(`${files[part]!}.tmp`, { highWaterMark: 1 << 20 });
      out.write(`${REGISTRAR_HEADER_LINE}\n`);
    }
    const change = i <= reg.orgs ? { moved: isMoved(i), confirmed: isConfirmed(i) } : {};
    if (change.moved) counts.moved++;
    if (change.confirmed) counts.confirmed++;
    chunk.push(row(i, after[i - 1]!, change));
    inPart++;
    if (chunk.length === 2000) await flush();
  }
  await close();
  writeFileSync(`${namesAfterFile}.tmp`, `${after.join('\n')}\n`);
  renameSync(`${namesAfterFile}.tmp`, namesAfterFile);
  writeFileSync(countsFile, JSON.stringify(counts));
  return { files, namesAfterFile, counts };
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
