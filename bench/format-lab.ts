import { execFileSync } from 'node:child_process';
import { linkSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Meilisearch, type Settings } from 'meilisearch';
import { startMeiliServer } from '../bin/local/meili-server.js';
import { legacySettings, ORG_INDEX_LOAD_SETTINGS, ORG_INDEX_SETTINGS } from '../search/index-definition.js';
import { foldName, planTerm } from '../search/name-text.js';
import {
  type OrgRowForIndex,
  toOrgDocument,
  toV4OrgDocument,
  toV5OrgDocument,
  toV6OrgDocument,
  updatedBuckets,
  updatedKeys,
  v5NameBucket,
} from '../search/org-document.js';
import { loadConfig } from '../shared/config.js';
import { allocatedBytes } from './memory-cap.js';
import { MemoryWatch } from './process-memory.js';
import { labRows, orgsArg } from './register/lab-rows.js';

/**
 * Lab: index formats side by side on the same names, in one private Meilisearch, each built as
 * the rebuild builds (words first, filters and sorts after the load):
 *
 *   node --import tsx bench/format-lab.ts [--orgs 300000] [--only v4,v5,v6,v7,v7p,v7h,v5a,floor]
 *   LAB_COMPARE=v5,v5a node --import tsx bench/format-lab.ts --only v5,v5a
 *   LAB_DEPTH=4 node --import tsx bench/format-lab.ts --orgs 2000000 --only v5   # as a rebuild posts
 *   LAB_INDEXING_THREADS=2 node --import tsx bench/format-lab.ts --only v5        # Meilisearch's --max-indexing-threads
 *   LAB_LOCALES=eng node --import tsx bench/format-lab.ts --only v5               # `g` declared in one language (localizedAttributes)
 *   LAB_DEFER_PREFIX=1 node --import tsx bench/format-lab.ts --only v5            # prefix databases built once, with the filters and sorts
 *   LAB_TRACE=1 node --import tsx bench/format-lab.ts --only v5                   # where Meilisearch's batches spent their time
 *   LAB_CHUNK=100000 LAB_DEPTH=2 node --import tsx bench/format-lab.ts --only v5  # documents per task (default 20,000)
 *   LAB_MDB_STAT=1 node --import tsx bench/format-lab.ts --only v7                # bytes per Org of each LMDB database (mdb_stat)
 *
 * - v4: format 4 (`updated` sorted on `t`, two unique strings per Org; Orgs filtered by `id`);
 * - v5: format 5 (`updated` sorted on `u` (ms) then `db` then `d`; Orgs filtered by `d`);
 * - v6: format 6 (format 5 with the crowded name prefixes bucketed finer: `np`);
 * - v7: format 7, as shipped (format 6 with the first characters `n1` and `d1` sorted on first);
 * - v7p, v7h: format 7 with the words where Meilisearch keeps their positions coarsely (nine padding
 *   words first, or hard separators between the words; see v7pDoc): sizes and build times only, the
 *   answers are the same (`LAB_COMPARE=v7,v7p`);
 * - v5tb: the first candidate for format 5 (`updated` sorted on format 4's buckets `tb`, then `d`);
 * - v5a: v5tb with `tb` one value per Org, `updated` in ms alone;
 * - floor: the words and links alone, no sort;
 * - floor-n, floor-d, floor-u: the floor and one key of format 7, sorted (and filtered as shipped);
 * - floor-du: the floor with `d` and `u`, every key of format 7 but the name's (sizes only);
 * - coarse, coarseq: the buckets alone as facets (`nb`, `u`, `db`), no exact `n` or `d` (sizes only).
 *
 * Prints build time, bytes per Org and stored-document bytes of each, then for two of them
 * (LAB_COMPARE, default v6,v7) Meilisearch's own processingTimeMs (median of five) of the pages the
 * API asks for, and whether both return the same ids. `updated` is one value per 5,000 Orgs, as an
 * import transaction writes it.
 */
const args = process.argv.slice(2);
const N = orgsArg(300_000);
const DIR = `/tmp/bizdir-format-lab-${process.pid}`;
const DEPTH = Number(process.env.LAB_DEPTH ?? 1);
/** LAB_CHUNK: documents per task (default 20,000; the rebuild posts BULK_CHUNK: reindex.ts). */
const CHUNK = Number(process.env.LAB_CHUNK ?? 20_000);
if (!Number.isInteger(CHUNK) || CHUNK < 1)
  throw new Error(`LAB_CHUNK: expected 1 or more, got ${JSON.stringify(process.env.LAB_CHUNK)}`);
/** LAB_LOCALES: `g` declared in these languages, so Meilisearch's tokenizer need not detect one. */
const LOCALIZED: Settings = process.env.LAB_LOCALES
  ? {
      localizedAttributes: [
        { attributePatterns: ['g'], locales: process.env.LAB_LOCALES.split(',') as never },
      ],
    }
  : {};

/**
 * LAB_DEFER_PREFIX: the documents are loaded with `prefixSearch: disabled`, and the prefix
 * databases are asked for with the filters and sorts, so they are built once instead of being
 * updated by every batch.
 */
const DEFER_PREFIX = process.env.LAB_DEFER_PREFIX === '1';

/**
 * Meilisearch's own account of an index's batches (`/batches` → `stats.progressTrace`): seconds
 * per step, summed over the batches, the `limit` largest. The trace's keys are step paths
 * (`processing tasks > indexing > ...`) and its values durations such as `1.23s` or `456.78ms`.
 */
async function traceSummary(host: string, key: string, uid: string, limit = 14): Promise<string> {
  const seconds = new Map<string, number>();
  let batches = 0;
  let from: number | undefined;
  for (;;) {
    const url = `${host}/batches?indexUids=${uid}&limit=100${from === undefined ? '' : `&from=${from}`}`;
    const page = (await (await fetch(url, { headers: { Authorization: `Bearer ${key}` } })).json()) as {
      results: { uid: number; stats: { progressTrace?: Record<string, string> } }[];
      next: number | null;
    };
    for (const batch of page.results) {
      batches++;
      for (const [step, text] of Object.entries(batch.stats.progressTrace ?? {})) {
        const m = /^([\d.]+)(ms|s|µs|ns|m)$/.exec(text);
        if (!m) continue;
        const unit = { ns: 1e-9, µs: 1e-6, ms: 1e-3, s: 1, m: 60 }[m[2] as 'ns' | 'µs' | 'ms' | 's' | 'm'];
        seconds.set(step, (seconds.get(step) ?? 0) + Number(m[1]) * unit);
      }
    }
    if (page.next === null || page.next === undefined) break;
    from = page.next;
  }
  const steps = [...seconds.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([step, s]) => `  ${s.toFixed(1).padStart(7)} s  ${step}`);
  return [`  ${batches} batches`, ...steps].join('\n');
}

const rows = await labRows(N);

/** The first candidate for format 5: `updated` as format 4's buckets `tb`, then `d` (no `u`). */
const v5tbDoc = (row: OrgRowForIndex) => {
  const { u: _u, np: _np, n1: _n1, d1: _d1, ua: _ua, ud: _ud, ...rest } = toOrgDocument(row);
  return { ...rest, nb: v5NameBucket(rest.n), tb: updatedBuckets(updatedKeys(row.updated, row.uid)) };
};
const v5tbSettings: Settings = { ...ORG_INDEX_SETTINGS, sortableAttributes: ['n', 'd', 'nb', 'tb', 'db'] };
/** v5tb with `tb` one value per Org, `updated` in ms alone, ties walked on `d`. */
const v5aDoc = (row: OrgRowForIndex) => {
  const { tb, ...rest } = v5tbDoc(row);
  return { ...rest, tb: tb[0].slice(0, 10) };
};
/**
 * Format 7 with the words placed where Meilisearch keeps their positions coarsely. Meilisearch stores
 * each word once more per position bucket it stands at in the field (word position docids; positions
 * 0-15 each a bucket of their own, then 24, 32, 64, ...), which no query of ours reads (`sort` is the
 * only ranking rule; a phrase under `byAttribute` is "these words in the field"). `v7p`: nine words
 * `xj` (a code no query word can start with: name-text.ts) at positions 0-32 first, so a name's
 * words from position 36 on share the bucket 64 (up to 29 of them). `v7h`: the words separated by
 * hard separators (4 positions apart), so fewer buckets per name without extra words.
 */
const PADDING = 'xj. '.repeat(9);
const v7pDoc = (row: OrgRowForIndex) => {
  const doc = toOrgDocument(row);
  return { ...doc, g: PADDING + doc.g };
};
const v7hDoc = (row: OrgRowForIndex) => {
  const doc = toOrgDocument(row);
  return { ...doc, g: doc.g.replaceAll(' ', '. ') };
};
/** The floor: the words and links alone. */
const floorDoc = (row: OrgRowForIndex) => {
  const { id, g, l } = toOrgDocument(row);
  return { id, g, ...(l ? { l } : {}) };
};
const floorSettings: Settings = {
  ...ORG_INDEX_LOAD_SETTINGS,
  filterableAttributes: [
    {
      attributePatterns: ['l'],
      features: { facetSearch: false, filter: { equality: true, comparison: false } },
    },
  ],
};

/**
 * The floor and keys of format 7 (each its document field and its facet), to price each alone:
 * `floor-n` the name key (sorted, and filtered with comparisons for the relevance tiers), `floor-d`
 * the stable domain (sorted as every order's tie-break, and filtered to name Orgs), `floor-u`
 * `updated` in ms (sorted).
 */
type FloorKey = 'n' | 'd' | 'u';
const floorKeyDoc =
  (...keys: FloorKey[]) =>
  (row: OrgRowForIndex) => {
    const doc = toOrgDocument(row);
    return { ...floorDoc(row), ...Object.fromEntries(keys.map((key) => [key, doc[key]])) };
  };
const floorKeySettings = (...keys: FloorKey[]): Settings => ({
  ...ORG_INDEX_LOAD_SETTINGS,
  filterableAttributes: [
    {
      attributePatterns: keys.includes('d') ? ['l', 'd'] : ['l'],
      features: { facetSearch: false, filter: { equality: true, comparison: false } },
    },
    ...(keys.includes('n')
      ? [
          {
            attributePatterns: ['n'],
            features: { facetSearch: false, filter: { equality: true, comparison: true } },
          },
        ]
      : []),
  ],
  sortableAttributes: keys,
});

/**
 * Coarse keys only (a candidate for a format 6): the exact keys `n` and `d` are no longer facets
 * (`n` stays in the stored document), so Meilisearch orders only by buckets and the exact order
 * inside the buckets a page touches would be restored outside it. `coarse` keeps format 5's
 * bucket widths (3 characters of `n`, 2 of `d`). Prefixes of the name key make very uneven
 * buckets (at 5.7M one 3-character bucket holds 284,330 names), so `coarseq` has equal buckets:
 * `nb` is the name's rank in name order over 100 (a number), `db` 3 characters of `d`.
 */
const coarseDoc = (row: OrgRowForIndex) => {
  const { d, np: _np, db: _db, n1: _n1, d1: _d1, ua: _ua, ud: _ud, ...rest } = toOrgDocument(row);
  return { ...rest, nb: rest.n.slice(0, 3), db: d.slice(0, 2) };
};
const nameRank = new Map<number, number>();
const coarseqDoc = (row: OrgRowForIndex) => {
  if (nameRank.size === 0) {
    const keyed = rows.map((r) => ({ id: r.id, n: toOrgDocument(r).n }));
    keyed.sort((a, b) => (a.n < b.n ? -1 : a.n > b.n ? 1 : 0));
    for (const [i, k] of keyed.entries()) nameRank.set(k.id, i);
  }
  const { d, np: _np, db: _db, n1: _n1, d1: _d1, ua: _ua, ud: _ud, ...rest } = toOrgDocument(row);
  return { ...rest, nb: Math.floor(nameRank.get(row.id)! / 100), db: d.slice(0, 3) };
};
const coarseSettings: Settings = {
  ...ORG_INDEX_LOAD_SETTINGS,
  filterableAttributes: [
    {
      attributePatterns: ['l'],
      features: { facetSearch: false, filter: { equality: true, comparison: false } },
    },
    {
      attributePatterns: ['nb', 'db'],
      features: { facetSearch: false, filter: { equality: true, comparison: true } },
    },
  ],
  sortableAttributes: ['nb', 'u', 'db'],
};

/** LAB_INDEXING_THREADS as a thread count, or an error naming it (never NaN passed to Meilisearch). */
function indexingThreads(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`LAB_INDEXING_THREADS: expected 1 or more, got ${JSON.stringify(text)}`);
  return n;
}

/**
 * LAB_MDB_STAT=1: the LMDB databases of the index just built, by the pages each holds (`mdb_stat -a`,
 * from Debian's lmdb-utils), largest first, in bytes per Org: where an index's bytes go.
 */
const brokenDown = new Set<string>();
function lmdbBreakdown(dir: string, orgs: number): string {
  const lines: string[] = [];
  for (const name of readdirSync(join(dir, 'data.ms', 'indexes'))) {
    // The index just built: the folders of the ones before it were printed after their builds.
    if (brokenDown.has(name)) continue;
    brokenDown.add(name);
    // Meilisearch's LMDB writes a lock file of another version than Debian's tools read: they read
    // a hard link of the data file in a folder of their own, with a lock file of their own.
    const linked = join(dir, `mdb-stat-${name}`);
    rmSync(linked, { recursive: true, force: true });
    mkdirSync(linked);
    linkSync(join(dir, 'data.ms', 'indexes', name, 'data.mdb'), join(linked, 'data.mdb'));
    const out = execFileSync('mdb_stat', ['-a', linked], { encoding: 'utf8' });
    rmSync(linked, { recursive: true, force: true });
    const sizes: [string, number, number][] = [];
    let db = '(main)';
    let pageSize = 4096;
    let pages = 0;
    let entries = 0;
    const flush = () => {
      if (pages > 0) sizes.push([db, pages * pageSize, entries]);
      pages = 0;
      entries = 0;
    };
    for (const line of out.split('\n')) {
      const status = /^Status of (.*)$/.exec(line.trim());
      if (status) {
        flush();
        db = status[1]!;
      }
      const size = /Page size: (\d+)/.exec(line);
      if (size) pageSize = Number(size[1]);
      const count = /(Branch|Leaf|Overflow) pages: (\d+)/.exec(line);
      if (count) pages += Number(count[2]);
      const e = /Entries: (\d+)/.exec(line);
      if (e) entries = Number(e[1]);
    }
    flush();
    sizes.sort((a, b) => b[1] - a[1]);
    const total = sizes.reduce((sum, [, bytes]) => sum + bytes, 0);
    lines.push(`  index folder ${name}: ${Math.round(total / orgs)} B/Org in its databases`);
    for (const [dbName, bytes, count] of sizes)
      lines.push(
        `    ${dbName.padEnd(40)} ${String(Math.round(bytes / orgs)).padStart(6)} B/Org  ${count} entries`,
      );
  }
  return lines.join('\n');
}

rmSync(DIR, { recursive: true, force: true });
const server = await startMeiliServer({
  dataDir: DIR,
  masterKey: `format-lab-${process.pid}-key`,
  maxIndexingMemory: process.env.LAB_INDEXING_MEMORY ?? '2 GiB',
  // Meilisearch's own default is half the machine's cores: one thread on a 2-core machine.
  ...(process.env.LAB_INDEXING_THREADS
    ? { maxIndexingThreads: indexingThreads(process.env.LAB_INDEXING_THREADS) }
    : {}),
  // As shipped: LMDB's write map unless MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE=false.
  reduceIndexingMemory: loadConfig().meiliReduceIndexingMemory,
});
// The data folder goes on every way out, `process.exit` after the builds included.
process.once('exit', () => rmSync(DIR, { recursive: true, force: true }));
const meili = new Meilisearch({ host: server.url, apiKey: server.masterKey, timeout: 600_000 });
const onlyAt = args.indexOf('--only');
const only = (onlyAt >= 0 ? args[onlyAt + 1]! : 'v4,v5,v6,v7,v5tb,v5a,floor,coarse,coarseq').split(',');
try {
  let before = (await meili.getStats()).usedDatabaseSize;
  // The disk the data folder holds (du): /stats databaseSize is a 2 TiB sparse file under the write map.
  let beforeFile = allocatedBytes(DIR);
  const formats = [
    ['v4', legacySettings(4), toV4OrgDocument],
    ['v5', legacySettings(5), toV5OrgDocument],
    ['v6', legacySettings(6), toV6OrgDocument],
    ['v7', ORG_INDEX_SETTINGS, toOrgDocument],
    ['v7p', ORG_INDEX_SETTINGS, v7pDoc],
    ['v7h', ORG_INDEX_SETTINGS, v7hDoc],
    ['v5tb', v5tbSettings, v5tbDoc],
    ['v5a', v5tbSettings, v5aDoc],
    ['floor', floorSettings, floorDoc],
    ['floor-n', floorKeySettings('n'), floorKeyDoc('n')],
    ['floor-d', floorKeySettings('d'), floorKeyDoc('d')],
    ['floor-u', floorKeySettings('u'), floorKeyDoc('u')],
    ['floor-du', floorKeySettings('d', 'u'), floorKeyDoc('d', 'u')],
    ['coarse', coarseSettings, coarseDoc],
    ['coarseq', coarseSettings, coarseqDoc],
  ] as const;
  for (const [uid, settings, toDoc] of formats) {
    if (!only.includes(uid)) continue;
    const t0 = Date.now();
    const loadWatch = new MemoryWatch(server.process.pid!);
    await meili.createIndex(uid, { primaryKey: 'id' }).waitTask();
    await meili
      .index(uid)
      .updateSettings({
        ...ORG_INDEX_LOAD_SETTINGS,
        ...LOCALIZED,
        ...(DEFER_PREFIX ? { prefixSearch: 'disabled' as const } : {}),
      })
      .waitTask({ timeout: 600_000 });
    // LAB_DEPTH tasks of LAB_CHUNK documents in flight (the rebuild keeps BULK_DEPTH: reindex.ts), so that
    // Meilisearch batches them as it batches a rebuild's; default one at a time.
    const inFlight: Promise<unknown>[] = [];
    for (let i = 0; i < rows.length; i += CHUNK) {
      inFlight.push(
        meili
          .index(uid)
          .addDocuments(rows.slice(i, i + CHUNK).map((r) => toDoc(r)))
          .waitTask({ timeout: 3_600_000, interval: 200 }),
      );
      if (inFlight.length >= DEPTH) await inFlight.shift();
    }
    await Promise.all(inFlight);
    const loaded = Date.now();
    loadWatch.stop();
    const settingsWatch = new MemoryWatch(server.process.pid!);
    await meili
      .index(uid)
      .updateSettings({ ...settings, ...LOCALIZED })
      .waitTask({ timeout: 3_600_000, interval: 200 });
    settingsWatch.stop();
    if (process.env.LAB_TRACE === '1')
      console.log(
        `${uid}: Meilisearch's batches, summed by step:\n${await traceSummary(server.url, server.masterKey, uid)}`,
      );
    const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
    console.log(
      `${uid}: Meilisearch anonymous / file-backed peak: documents ${mib(loadWatch.peakAnon)} / ${mib(loadWatch.peakFile)}, filters and sorts ${mib(settingsWatch.peakAnon)} / ${mib(settingsWatch.peakFile)}`,
    );
    const stats = await meili.getStats();
    const own = await meili.index(uid).getStats();
    console.log(
      `${uid}: raw documents ${Math.round(own.rawDocumentDbSize / N)} B/Org, average document ${Math.round(own.avgDocumentSize)} B`,
    );
    console.log(
      `${uid}: documents ${((loaded - t0) / 1000).toFixed(1)} s, filters and sorts ${((Date.now() - loaded) / 1000).toFixed(1)} s; used ${Math.round((stats.usedDatabaseSize - before) / N)} B/Org, disk ${Math.round((allocatedBytes(DIR) - beforeFile) / N)} B/Org`,
    );
    before = stats.usedDatabaseSize;
    beforeFile = allocatedBytes(DIR);
    if (process.env.LAB_MDB_STAT === '1') console.log(`${uid}: LMDB databases\n${lmdbBreakdown(DIR, N)}`);
  }
  type Compared = 'v4' | 'v5' | 'v6' | 'v7' | 'v7p' | 'v7h' | 'v5a';
  const [A, B] = (process.env.LAB_COMPARE ?? 'v6,v7').split(',') as [Compared, Compared];
  if (!only.includes(A) || !only.includes(B)) process.exit(0);
  const V7_RULES = {
    name: ['n1:asc', 'np:asc', 'n:asc', 'd:asc'],
    '-name': ['n1:desc', 'np:desc', 'n:desc', 'd:asc'],
    updated: ['u:asc', 'ua:asc', 'd:asc'],
    '-updated': ['u:desc', 'ud:desc', 'd:asc'],
    domain: ['d1:asc', 'db:asc', 'd:asc'],
  } as const;
  const rules = {
    v4: {
      name: ['nb:asc', 'n:asc', 'd:asc'],
      '-name': ['nb:desc', 'n:desc', 'd:asc'],
      updated: ['tb:asc', 't:asc'],
      '-updated': ['tb:desc', 't:desc'],
      domain: ['db:asc', 'd:asc'],
    },
    v5a: {
      name: ['nb:asc', 'n:asc', 'd:asc'],
      '-name': ['nb:desc', 'n:desc', 'd:asc'],
      updated: ['tb:asc', 'd:asc'],
      '-updated': ['tb:desc', 'd:asc'],
      domain: ['db:asc', 'd:asc'],
    },
    v5: {
      name: ['nb:asc', 'n:asc', 'd:asc'],
      '-name': ['nb:desc', 'n:desc', 'd:asc'],
      updated: ['u:asc', 'db:asc', 'd:asc'],
      '-updated': ['u:desc', 'db:asc', 'd:asc'],
      domain: ['db:asc', 'd:asc'],
    },
    v6: {
      name: ['np:asc', 'n:asc', 'd:asc'],
      '-name': ['np:desc', 'n:desc', 'd:asc'],
      updated: ['u:asc', 'db:asc', 'd:asc'],
      '-updated': ['u:desc', 'db:asc', 'd:asc'],
      domain: ['db:asc', 'd:asc'],
    },
    v7: V7_RULES,
    v7p: V7_RULES,
    v7h: V7_RULES,
    v5tb: {
      name: ['nb:asc', 'n:asc', 'd:asc'],
      '-name': ['nb:desc', 'n:desc', 'd:asc'],
      updated: ['tb:asc', 'd:asc'],
      '-updated': ['tb:desc', 'd:asc'],
      domain: ['db:asc', 'd:asc'],
    },
  } as const;
  const time = async (
    uid: keyof typeof rules,
    q: string,
    filter: string[],
    sort: readonly string[],
    offset: number,
  ) => {
    const ms: number[] = [];
    let ids = '';
    let total = 0;
    for (let k = 0; k < 5; k++) {
      const r = await meili
        .index(uid)
        .search(q, { filter, sort: [...sort], offset, limit: 20, attributesToRetrieve: ['id'] });
      ms.push(r.processingTimeMs);
      ids = r.hits.map((h) => h.id).join(',');
      total = r.estimatedTotalHits ?? 0;
    }
    ms.sort((a, b) => a - b);
    return { ms: ms[2]!, ids, total };
  };
  console.log(
    `| query | sort | offset | matches | ${A} ms | ${B} ms | same ids |\n|---|---|---|---|---|---|---|`,
  );
  const cases: { label: string; q: string; filter: string[] }[] = [
    ...['ho', 'j', 'sh', 'limited', 'services', ''].map((term) => {
      const plan = planTerm(foldName(term));
      return {
        label: term || '(every Org)',
        q: term === '' ? '' : plan.kind === 'prefix' ? plan.prefix : `"${plan.words.join(' ')}"`,
        filter: ['NOT l = "-"'],
      };
    }),
  ];
  for (const c of cases)
    for (const sort of ['updated', '-updated', 'name', '-name', 'domain'] as const)
      for (const offset of [0, 100, 2_000, 9_900]) {
        const a = await time(A, c.q, c.filter, rules[A][sort], offset);
        const b = await time(B, c.q, c.filter, rules[B][sort], offset);
        console.log(
          `| ${c.label} | ${sort} | ${offset} | ${a.total} | ${a.ms} | ${b.ms} | ${a.ids === b.ids ? 'yes' : 'NO'} |`,
        );
      }
} finally {
  await server.stop();
  rmSync(DIR, { recursive: true, force: true });
}
