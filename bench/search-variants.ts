import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Meilisearch, type Settings } from 'meilisearch';
import { startMeiliServer } from '../bin/local/meili-server.js';
import { ORG_INDEX_LOAD_SETTINGS, ORG_INDEX_SETTINGS } from '../search/index-definition.js';
import { codeOf, foldName } from '../search/name-text.js';
import { toOrgDocument, updatedKeys } from '../search/org-document.js';
import { MemoryWatch } from './process-memory.js';
import { NameGenerator } from './register/names.js';

/**
 * Where the bytes of the Org index go: builds the same generated names into Meilisearch under
 * several document shapes and prints, per shape, the build time, `/stats` bytes per Org and (when
 * `mdb_stat` from lmdb-utils is installed) the size of each of Meilisearch's internal databases.
 * A lab for choosing the index design, not part of the product.
 *
 *   node --import tsx bench/search-variants.ts [--orgs 200000] [--only shipped,plain]
 */
const args = process.argv.slice(2);
const opt = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : fallback;
};
const ORGS = Number(opt('orgs', '200000'));
const ONLY = opt('only', '');

interface Variant {
  name: string;
  doc: (row: Row) => object;
  load: Settings;
  /** Applied after the documents, one settings task after another. */
  after?: Settings | Settings[];
}
interface Row {
  id: number;
  uid: string;
  name: string;
  updated: Date;
  version_number: number;
}

const shipped = (row: Row) => toOrgDocument(row);

/** The folded name as base-42 symbols, order-preserving, END (0) smaller than every symbol. */
function symbols(folded: string): number[] {
  const out: number[] = [];
  for (const ch of folded) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x20) out.push(1, cp);
    else if (cp === 0x20) out.push(2);
    else if (cp < 0x30) out.push(3, cp - 0x20);
    else if (cp <= 0x39) out.push(4 + cp - 0x30);
    else if (cp < 0x61) out.push(14, cp - 0x3a);
    else if (cp <= 0x7a) out.push(15 + cp - 0x61);
    else {
      const v = cp - 0x7b;
      out.push(41, Math.floor(v / 74088) % 42, Math.floor(v / 1764) % 42, Math.floor(v / 42) % 42, v % 42);
    }
  }
  return out;
}
function chunks(folded: string, count: number): number[] {
  const s = symbols(folded);
  const out: number[] = [];
  for (let c = 0; c < count; c++) {
    let v = 0;
    for (let i = 0; i < 9; i++) v = v * 42 + (s[c * 9 + i] ?? 0);
    out.push(v);
  }
  return out;
}
const words = (r: Row) => {
  const { id, g, l } = toOrgDocument(r);
  return { id, g, ...(l ? { l } : {}) };
};
const wordLoad: Settings = { ...ORG_INDEX_LOAD_SETTINGS, displayedAttributes: ['id'] };
const linkFilter = ORG_INDEX_SETTINGS.filterableAttributes!.slice(0, 1);
const cmp = { facetSearch: false, filter: { equality: true, comparison: true } } as const;
const numeric = (count: number): Variant => ({
  name: `numeric-${count}`,
  doc: (r) => {
    const ns = chunks(foldName(r.name), count);
    const doc: Record<string, unknown> = {
      ...words(r),
      d: Number.parseInt(r.uid, 36),
      u: r.updated.getTime(),
      v: 1,
    };
    ns.forEach((n, i) => {
      doc[`n${i + 1}`] = n;
    });
    return doc;
  },
  load: wordLoad,
  after: {
    filterableAttributes: [
      ...linkFilter,
      { attributePatterns: Array.from({ length: count }, (_, i) => `n${i + 1}`), features: cmp },
    ],
    sortableAttributes: [...Array.from({ length: count }, (_, i) => `n${i + 1}`), 'u', 'd'],
  },
});
const one = (field: 'n' | 'd' | 'u', sortable: boolean, filterable: boolean): Variant => ({
  name: `words+${field}${sortable ? '-sort' : ''}${filterable ? '-filter' : ''}`,
  doc: (r) => ({ ...words(r), [field]: field === 'u' ? r.updated.getTime() : toOrgDocument(r)[field] }),
  load: wordLoad,
  after: {
    filterableAttributes: [
      ...linkFilter,
      ...(filterable ? [{ attributePatterns: [field], features: cmp }] : []),
    ],
    sortableAttributes: sortable ? [field] : [],
  },
});

const coarse = (distinct: number): Variant => ({
  name: `words+coarse-${distinct}`,
  doc: (r) => ({ ...words(r), c: (r.id * 7_919) % distinct }),
  load: wordLoad,
  after: { filterableAttributes: linkFilter, sortableAttributes: ['c'] },
});

const multi = (count: number): Variant => ({
  name: `words+multi-${count}`,
  doc: (r) => ({
    ...words(r),
    s: Array.from({ length: count }, (_, k) => k * 1e13 + ((r.id * 7_919 + k) % 1e9)),
  }),
  load: wordLoad,
  after: { filterableAttributes: linkFilter, sortableAttributes: ['s'] },
});

const VARIANTS: Variant[] = [
  {
    name: 'words+t-sort',
    doc: (r) => ({ ...words(r), t: updatedKeys(r.updated, r.uid) }),
    load: wordLoad,
    after: { filterableAttributes: linkFilter, sortableAttributes: ['t'] },
  },
  multi(1),
  multi(2),
  { name: 'words-only-2', doc: words, load: wordLoad, after: { filterableAttributes: linkFilter } },
  coarse(100),
  coarse(10_000),
  one('n', true, false),
  one('n', true, true),
  one('d', true, false),
  one('u', true, false),
  numeric(1),
  numeric(2),
  numeric(3),
  { name: 'plain', doc: (r) => ({ id: r.id, name: r.name }), load: {} },
  {
    name: 'words-only',
    doc: (r) => {
      const { id, g, l } = toOrgDocument(r);
      return { id, g, ...(l ? { l } : {}) };
    },
    load: { ...ORG_INDEX_LOAD_SETTINGS, displayedAttributes: ['id'] },
    after: { filterableAttributes: ORG_INDEX_SETTINGS.filterableAttributes!.slice(0, 1) },
  },
  { name: 'shipped', doc: shipped, load: ORG_INDEX_LOAD_SETTINGS, after: ORG_INDEX_SETTINGS },
  // The same index with filters and sorts declared before the documents: kept batch by batch.
  { name: 'shipped-upfront', doc: shipped, load: ORG_INDEX_SETTINGS },
  // No prefix search: one- and two-character terms are words of their own (each distinct
  // character and pair of the name, in the same code as the trigrams).
  {
    name: 'noprefix',
    // For size and update cost only: its bare one-character words let Meilisearch split a
    // two-character query word in two (docs/search.md), so its answers are not exact.
    doc: (r) => {
      const doc = toOrgDocument(r);
      const codes = [...foldName(r.name)].map(codeOf);
      // The first two codes of each trigram word (END-padded at the end, as the trigrams are).
      const pairs = codes.map((c, i) => c + (codes[i + 1] ?? 'xk'));
      return { ...doc, g: [...new Set([...doc.g.split(' '), ...pairs, ...codes])].join(' ') };
    },
    load: { ...ORG_INDEX_LOAD_SETTINGS, prefixSearch: 'disabled' },
    after: { ...ORG_INDEX_SETTINGS, prefixSearch: 'disabled' },
  },
  // The shipped settings after the load, but one facet at a time.
  {
    name: 'shipped-stepwise',
    doc: shipped,
    load: ORG_INDEX_LOAD_SETTINGS,
    after: stepwise(ORG_INDEX_SETTINGS),
  },
];

/** `settings`' filters, then its sorts, added one attribute per settings task. */
function stepwise(settings: Settings): Settings[] {
  const steps: Settings[] = [];
  const filters: NonNullable<Settings['filterableAttributes']> = [];
  for (const f of settings.filterableAttributes ?? []) {
    filters.push(f);
    steps.push({ filterableAttributes: [...filters] });
  }
  const sorts: string[] = [];
  for (const s of settings.sortableAttributes ?? []) {
    sorts.push(s);
    steps.push({ sortableAttributes: [...sorts] });
  }
  return steps;
}

const mib = (bytes: number) => `${Math.round(bytes / 1048576)} MiB`;

function mdbBreakdown(dir: string): string[] {
  try {
    const out = execFileSync('mdb_stat', ['-a', dir], { encoding: 'utf8', maxBuffer: 64 << 20 });
    const rows: [string, number][] = [];
    let current = '';
    let pages = 0;
    const flush = () => {
      if (current) rows.push([current, pages]);
    };
    for (const line of out.split('\n')) {
      const db = /^Status of (.*)$/.exec(line);
      if (db) {
        flush();
        current = db[1]!;
        pages = 0;
      }
      const p = /(Branch|Leaf|Overflow) pages: (\d+)/.exec(line);
      if (p) pages += Number(p[2]);
    }
    flush();
    return rows
      .filter(([, p]) => p > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([n, p]) => `    ${n.padEnd(40)} ${((p * 4096) / ORGS).toFixed(1).padStart(8)} B/Org`);
  } catch {
    return ['    (mdb_stat not available)'];
  }
}

async function waitTask(meili: Meilisearch, p: Promise<{ taskUid: number }>): Promise<void> {
  const { taskUid } = await p;
  const task = await meili.tasks.waitForTask(taskUid, { timeout: 4 * 3_600_000, interval: 200 });
  if (task.status !== 'succeeded')
    throw new Error(`task ${taskUid} ${task.status}: ${JSON.stringify(task.error)}`);
}

async function main(): Promise<void> {
  const gen = new NameGenerator(1, ORGS);
  const rows: Row[] = [];
  const t0 = Date.parse('2020-01-01T00:00:00Z');
  for (let i = 1; i <= ORGS; i++) {
    const uid = ((i * 2_654_435_761) % 2_821_109_907_456).toString(36).padStart(8, '0');
    rows.push({
      id: i,
      uid,
      name: gen.next(),
      updated: new Date(t0 + ((i * 7_919) % 1e9) * 60),
      version_number: 1,
    });
  }
  const dataDir = path.join(os.tmpdir(), `bizdir-variants-${process.pid}`);
  const server = await startMeiliServer({
    dataDir,
    masterKey: 'lab-key-0123456789',
    maxIndexingMemory: '2 GiB',
  });
  const meili = new Meilisearch({ host: server.url, apiKey: server.masterKey, timeout: 600_000 });
  const base = (await meili.getStats()) as unknown as { usedDatabaseSize: number; databaseSize: number };
  try {
    for (const v of VARIANTS) {
      if (ONLY && !ONLY.split(',').includes(v.name)) continue;
      const uid = `lab_${v.name.replace(/\W/g, '_')}`;
      const watch = new MemoryWatch(server.process.pid!);
      const started = Date.now();
      await waitTask(meili, meili.createIndex(uid, { primaryKey: 'id' }));
      if (Object.keys(v.load).length > 0) await waitTask(meili, meili.index(uid).updateSettings(v.load));
      const inFlight: Promise<void>[] = [];
      for (let i = 0; i < rows.length; i += 20_000) {
        inFlight.push(waitTask(meili, meili.index(uid).addDocuments(rows.slice(i, i + 20_000).map(v.doc))));
        if (inFlight.length >= 4) await inFlight.shift();
      }
      await Promise.all(inFlight);
      watch.stop();
      const load = { anon: watch.peakAnon, file: watch.peakFile, total: watch.peakTotal };
      const afterWatch = new MemoryWatch(server.process.pid!);
      for (const step of [v.after ?? []].flat()) {
        const stepStarted = Date.now();
        await waitTask(meili, meili.index(uid).updateSettings(step));
        if (Array.isArray(v.after))
          console.log(
            `  step ${JSON.stringify(step)}: ${((Date.now() - stepStarted) / 1000).toFixed(1)} s, anon peak so far ${mib(watch.peakAnon)}`,
          );
      }
      const ms = Date.now() - started;
      afterWatch.stop();
      const stats = (await meili.getStats()) as unknown as { usedDatabaseSize: number; databaseSize: number };
      const idx = (await meili.index(uid).getStats()) as unknown as { rawDocumentDbSize?: number };
      const dirs = readdirSync(path.join(dataDir, 'data.ms', 'indexes'));
      // The newest index folder is this variant's (each variant is deleted after measuring).
      const dir = path.join(dataDir, 'data.ms', 'indexes', dirs[dirs.length - 1]!);
      const perOrg = (bytes: number) => `${(bytes / ORGS).toFixed(0)} B/Org`;
      console.log(
        `${v.name}: ${(ms / 1000).toFixed(1)} s, used ${perOrg(stats.usedDatabaseSize - base.usedDatabaseSize)}, file ${perOrg(stats.databaseSize - base.databaseSize)}, raw docs ${perOrg(idx.rawDocumentDbSize ?? 0)}, Meilisearch RSS peaks (anon / file-backed / sum): documents ${mib(load.anon)} / ${mib(load.file)} / ${mib(load.total)}, settings after them ${mib(afterWatch.peakAnon)} / ${mib(afterWatch.peakFile)} / ${mib(afterWatch.peakTotal)}`,
      );
      if (args.includes('--mdb')) for (const line of mdbBreakdown(dir)) console.log(line);
      // What one rename costs Meilisearch on an index of this size: the task's own duration.
      const renames: { ms: number; batchUid: number }[] = [];
      for (let k = 0; k < 10; k++) {
        const row = rows[(k * 97_331) % rows.length]!;
        const { taskUid } = await meili
          .index(uid)
          .addDocuments([v.doc({ ...row, name: `${row.name} RENAMED ${k}` })]);
        const task = await meili.tasks.waitForTask(taskUid, { timeout: 600_000, interval: 20 });
        renames.push({
          ms: Date.parse(task.finishedAt!) - Date.parse(task.startedAt!),
          batchUid: task.batchUid!,
        });
      }
      renames.sort((a, b) => a.ms - b.ms);
      console.log(
        `  one-document update: task p50 ${renames[5]!.ms} ms, max ${renames[9]!.ms} ms (10 updates)`,
      );
      // Where the median one spent its time, by Meilisearch's own account of the batch.
      const batch = (await (
        await fetch(`${server.url}/batches/${renames[5]!.batchUid}`, {
          headers: { authorization: `Bearer ${server.masterKey}` },
        })
      ).json()) as { stats?: { progressTrace?: Record<string, string> } };
      for (const [step, took] of Object.entries(batch.stats?.progressTrace ?? {}))
        console.log(`    ${step}: ${took}`);
      await waitTask(meili, meili.deleteIndex(uid));
    }
  } finally {
    await server.stop();
  }
}

await main();
