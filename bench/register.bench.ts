import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { type ExtraRequestInit, Meilisearch, type SearchParams } from 'meilisearch';
import pg from 'pg';
import { createAccount } from '../api/accounts/account.service.js';
import { freePort, startMeiliServer } from '../bin/local/meili-server.js';
import { ensureOrgIndex } from '../search/index-definition.js';
import { pendingChanges } from '../search/index-sync.repository.js';
import { succeeded } from '../search/meili-client.js';
import { foldName } from '../search/name-text.js';
import { reindex } from '../search/reindex.js';
import type { OrgSort } from '../search/search-query.js';
import { searchOrgs } from '../search/search-service.js';
import { parseServerTiming } from '../search/search-timing.js';
import { loadConfig } from '../shared/config.js';
import { createDb, type Db, migrateToLatest } from '../shared/db.js';
import { BIZDIR_ARGS, BIZDIR_HOW, buildBizdir } from './bizdir-cli.js';
import { partsReadMs } from './import-phases.js';
import { LOCAL_PG_ADMIN_URL, LOCAL_REDIS_URL, runStatement } from './local-services.js';
import {
  allocatedBytes,
  capMemory,
  evictFromPageCache,
  type MemoryCap,
  parseBytes,
  readIntoPageCache,
} from './memory-cap.js';
import { prng } from './org-names.js';
import { MemoryWatch, memory } from './process-memory.js';
import { describeNames, generateNextMonth, generateRegister } from './register/generate.js';
import { coined } from './register/names.js';
import { scheduledReindex } from './register/scheduled-reindex.js';
import { prepareSearchLoad, searchLoad } from './search-load/search-load.js';

/**
 * The whole register through the real pipeline, then the search on it:
 *
 *   npm run bench:register -- [--orgs 1000000] [--parts 1] [--queries 600] [--skip-pg] [--pg-queries N] [--skip-rebuild]
 *                             [--skip-plain] [--keep] [--reuse TAG] [--explain N] [--meili-memory 6GiB] [--prewarm]
 *                             [--mix-passes N] [--mix-during-rebuild] [--next-month [--month-back]]
 *                             [--scheduled-reindex]
 *                             [--load [--load-queries 20000] [--load-check 600] [--connections 16]]
 *
 * Generates a register (bench/register/generate.ts, cached under /tmp/bizdir-register), imports
 * it with `bizdir import registrar --wait` into a `bizdir worker` (which also keeps the index),
 * waits until every Org is searchable, then measures: index bytes per Org (Meilisearch /stats),
 * Meilisearch peak RSS, a full rebuild against a plain word index of the same names (same run),
 * the hard query mix through the API (a `bizdir serve` process: auth and credits) with every total
 * checked against a brute force count, the same mix on pg_trgm, and how long a rename takes to
 * become searchable.
 * Everything runs on its own database, queue prefix and Meilisearch (data under /tmp).
 *
 * `--keep` leaves the run's database and Meilisearch data in place and prints their tag;
 * `--reuse TAG` then measures the mix (and the renames) on them again without importing, so a
 * change to the query path is measured in a minute, not an import's time. `--explain N` replays
 * the N slowest queries of the mix in this process and prints each Meilisearch call they made
 * (filter, sort, page, Meilisearch's own processingTimeMs against the round trip) and the time
 * spent checking suspects in Postgres. `--meili-memory SIZE` runs Meilisearch under a hard memory
 * limit (a memory cgroup: anonymous memory and the page cache of its index, as compose's
 * `mem_limit` would; Linux, root) and reports the cgroup's peak and how often it hit the limit;
 * with `--reuse`, the index files are first dropped from the page cache so Meilisearch is charged
 * for every page it reads. `--prewarm` (with `--reuse`, without a memory limit) first reads the
 * index files into the page cache, as an operator warms a restarted Meilisearch, and the tables
 * the API reads an answer's Orgs from (pg_prewarm), so the mix measures a warm index and database
 * rather than first reads from disk. `--mix-passes N` runs the mix N times on the same processes and
 * reports each pass, with Meilisearch's page faults: the first pass also pays Meilisearch's first
 * touch of every index page it needs (a restarted Meilisearch maps its files anew), later ones not.
 * `--mix-during-rebuild` runs the rebuild step as `bizdir reindex --wait` (a process of its own, the
 * live index serving), asks the mix over and over meanwhile, and reports what an API user sees:
 * latency, 503s and totals, against the same brute force (e.g. to compare indexing threads).
 * `--next-month` then imports the same register a month later (companies gone, new, renamed,
 * moved, refiled: bench/register/generate.ts generateNextMonth) with `--full`, as a data engineer
 * does every month, and reports the import, when the index has caught up (it follows the import's
 * commits), and the mix again with every total against the month's own brute force.
 * `--month-back` then imports the first month's files once more (a second month of the same size,
 * undoing the first), to see whether the index's file grows again or reuses what the first freed.
 * `--scheduled-reindex` then saves a reindex schedule with `--when-grown 1.1` firing every minute,
 * lets the run's worker fire it, and reports the index's bytes per Org before and after against the
 * fresh build of the rebuild step (bench/register/scheduled-reindex.ts).
 * `--load` measures the search under load instead of the single-client steps (bench/search-load/:
 * `--load-queries` distinct queries of the hard mix over `--connections` kept-alive connections,
 * against a plain Meilisearch index of the same names, a trivial route and a skewed mix; totals of
 * `--load-check` distinct terms against brute force), then ends the run; with `--keep` / `--reuse`
 * it is measured again in a minute.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const flag = (name: string) => args.includes(`--${name}`);
/** A whole number of 0 or more, or an error that names the option (never NaN passed on). */
function count(what: string, text: string | undefined): number {
  const n = Number(text);
  if (text === undefined || text.trim() === '' || !Number.isInteger(n) || n < 0)
    throw new Error(`${what}: expected a whole number, got ${JSON.stringify(text ?? '')}`);
  return n;
}
const opt = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? count(`--${name}`, args[i + 1]) : fallback;
};
const ORGS = opt('orgs', 1_000_000);
const PARTS = opt('parts', 1);
const QUERIES = opt('queries', 600);
const EXPLAIN = opt('explain', 0);
const LOAD = flag('load');
const LOAD_OPTIONS = {
  connections: opt('connections', 16),
  queries: opt('load-queries', 20_000),
  checkTerms: opt('load-check', 600),
};
/** How many times the mix runs on the same API and Meilisearch processes (the first pass sets the figures). */
const MIX_PASSES = Math.max(1, opt('mix-passes', 1));
/**
 * pg_trgm runs the first N queries of the mix (default: all of it). At 5.7M it answers about 7 a
 * minute, so the whole mix takes over an hour; its p99 is then compared with the API's over the
 * same N queries.
 */
const PG_QUERIES = opt('pg-queries', Number.POSITIVE_INFINITY);
if (PG_QUERIES === 0) throw new Error('--pg-queries: expected 1 or more (or --skip-pg)');
if (flag('mix-during-rebuild') && flag('skip-rebuild'))
  throw new Error('--mix-during-rebuild: asks the mix while the rebuild step runs; drop --skip-rebuild');
/** `--next-month`: then the register a month later, imported with `--full` (see generateNextMonth). */
const NEXT_MONTH = flag('next-month');
/** `--month-back` (with --next-month): one more month, the first month's files again (see monthStep). */
const MONTH_BACK = flag('month-back');
if (MONTH_BACK && !NEXT_MONTH) throw new Error('--month-back: follows --next-month; give both');
const REUSE = (() => {
  const i = args.indexOf('--reuse');
  return i >= 0 ? args[i + 1] : undefined;
})();
if (REUSE !== undefined && !/^[0-9a-z_]+$/.test(REUSE)) throw new Error(`--reuse: not a run tag: ${REUSE}`);
const KEEP = flag('keep') || REUSE !== undefined;
if (NEXT_MONTH && REUSE !== undefined)
  throw new Error(
    '--next-month: imports the next month into the run; a kept run (--reuse) would no longer match its names',
  );
const MEILI_MEMORY = (() => {
  const i = args.indexOf('--meili-memory');
  return i >= 0 ? parseBytes(args[i + 1] ?? '') : undefined;
})();
const INDEXING_MEMORY = process.env.BENCH_MEILI_INDEXING_MEMORY ?? '2 GiB';
/** The shipped setting (shared/config.ts), read from the same variable: the write map unless `false`. */
const WRITE_MAP = loadConfig().meiliReduceIndexingMemory;
/** Meilisearch's --max-indexing-threads; unset, its own default (half the cores: one on 2 cores). */
const INDEXING_THREADS = process.env.BENCH_MEILI_INDEXING_THREADS
  ? count('BENCH_MEILI_INDEXING_THREADS', process.env.BENCH_MEILI_INDEXING_THREADS) || undefined
  : undefined;
const ADMIN = process.env.BENCH_PG_ADMIN_URL ?? LOCAL_PG_ADMIN_URL;
const REDIS = process.env.REDIS_URL ?? LOCAL_REDIS_URL;
const tag = REUSE ?? `${process.pid}_${Date.now().toString(36)}`;
const dbName = `bizdir_register_${tag}`;
const dbUrl = (() => {
  const u = new URL(ADMIN);
  u.pathname = `/${dbName}`;
  return u.toString();
})();
const prefix = `bizdir-register-${tag}`;
const INDEX = `orgs_${tag}`;
const MEILI_DIR = `/tmp/bizdir-register-meili-${tag}`;
/** The database folder alone (the data folder also holds Meilisearch's executable, 125 MB). */
const MEILI_DB = `${MEILI_DIR}/data.ms`;

const s = (ms: number) => (ms / 1000).toFixed(1);
const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const results: [string, string][] = [];
/** The figures as numbers, printed last as one JSON object (bench-table.ts reads it). */
const figures: Record<string, number> = {};
function report(label: string, value: string) {
  results.push([label, value]);
  console.log(`${label}: ${value}`);
}

/** One statement on its own connection (the admin database by default). */
const admin = (text: string, url = ADMIN) => runStatement(url, text);

/** The `bizdir` processes started and not yet exited: the clean-up stops them all. */
const children = new Set<ChildProcess>();

/** A `bizdir` process (the worker, the API) as users run it: built dist/ unless BENCH_WORKER=tsx. */
function bizdir(cmd: string[], env: Record<string, string>, nodeArgs: string[] = []): ChildProcess {
  const child = spawn(process.execPath, [...nodeArgs, ...BIZDIR_ARGS, ...cmd], {
    cwd: ROOT,
    env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

async function waitExit(child: ChildProcess): Promise<number> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode ?? 1;
  return new Promise((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
}

/** The total of each term of the mix, counted over the folded names (the truth the API must match). */
function bruteForceTotals(names: readonly string[], mix: readonly { q: string }[]): Map<string, number> {
  const folded = names.map(foldName);
  const truth = new Map<string, number>();
  for (const m of mix) {
    const f = foldName(m.q);
    if (!truth.has(f))
      truth.set(
        f,
        folded.reduce((n, name) => n + (name.includes(f) ? 1 : 0), 0),
      );
  }
  return truth;
}

/** Waits until a spawned server answers `url`; fails if it exits first or takes over a minute. */
async function untilListening(url: string, child: ChildProcess): Promise<void> {
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${url}: the server exited (code ${child.exitCode})`);
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() - started > 60_000) throw new Error(`${url}: no answer after 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The hard mix: every kind of term, every sort, shallow and deep pages (fixed seed). */
function queryMix(names: readonly string[], count: number) {
  const rand = prng(42);
  const pickName = () => names[Math.floor(rand() * names.length)]!;
  const words = () =>
    pickName()
      .split(' ')
      .filter((w) => w.length >= 2);
  const kinds: (() => string)[] = [
    () => pickWord(),
    () => pickWord().slice(0, 2 + Math.floor(rand() * 4)),
    () => {
      const w = longWord();
      const len = 3 + Math.floor(rand() * 4);
      const at = 1 + Math.floor(rand() * Math.max(1, w.length - len - 1));
      return w.slice(at, at + len);
    },
    () => {
      const n = pickName();
      const sp = n.indexOf(' ');
      return sp > 1
        ? n.slice(Math.max(0, sp - 1 - Math.floor(rand() * 3)), sp + 2 + Math.floor(rand() * 3))
        : n;
    },
    () => 'abcdefghijklmnoprstuwy'[Math.floor(rand() * 22)]!,
    () => pickWord().slice(0, 2),
    () => ['limited', 'ltd', 'services', 'e', 'holdings', 'uk', ' ltd', 'property'][Math.floor(rand() * 8)]!,
    () => pickName(),
    () => `${coined(50_000_000 + Math.floor(rand() * 1e6))}`.toLowerCase(),
    () => `zq${Math.floor(rand() * 1e6)}x`,
  ];
  function pickWord() {
    const w = words();
    return (w[Math.floor(rand() * w.length)] ?? 'ltd').toLowerCase();
  }
  function longWord() {
    for (let i = 0; i < 20; i++) {
      const w = pickWord();
      if (w.length >= 6) return w;
    }
    return 'limited';
  }
  const sorts = ['name', '-name', 'updated', '-updated', 'relevance'];
  const offsets = [0, 100, 9_900];
  return Array.from({ length: count }, (_, i) => ({
    q: kinds[i % kinds.length]!().toLowerCase(),
    sort: sorts[Math.floor(i / kinds.length) % sorts.length]!,
    offset: offsets[Math.floor(i / (kinds.length * sorts.length)) % offsets.length]!,
  }));
}

/**
 * Replays queries in this process through the search use case, with a Meilisearch client that
 * records every call, and prints where each query's time went.
 */
async function explainQueries(
  meili: Meilisearch,
  db: ReturnType<typeof createDb>['db'],
  queries: { ms: number; q: string; sort: string; offset: number }[],
) {
  type Call = { what: string; ms: number; meiliMs: number; total: number; at: number };
  let calls: Call[] = [];
  let started = 0;
  const traced = {
    index: (uid: string) => {
      const index = meili.index(uid);
      // Every other call (the format check, say) goes to the real index.
      return new Proxy(index, {
        get: (target, prop) => {
          if (prop === 'search') return search;
          const value = Reflect.get(target, prop, target);
          // Bound to the real index: its methods use private fields, which a proxy lacks.
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      async function search(q: string, params: SearchParams, init?: ExtraRequestInit) {
        const at = performance.now();
        const res = await index.search(q, params, init);
        const filter = JSON.stringify(params.filter ?? []);
        calls.push({
          what: `q=${JSON.stringify(q).slice(0, 40)} filter=${filter.length > 90 ? `${filter.slice(0, 90)}…` : filter} sort=${JSON.stringify(params.sort ?? [])} offset=${params.offset ?? 0} limit=${params.limit ?? 20}`,
          ms: performance.now() - at,
          meiliMs: res.processingTimeMs,
          total: res.estimatedTotalHits ?? -1,
          at: at - started,
        });
        return res;
      }
    },
  } as unknown as Meilisearch;
  const deps = { db, meili: traced, indexUid: INDEX, domainSuffix: 'bizdir.bench' };
  console.log('  explain (replayed in this process; times in ms, "at" from the query start):');
  for (const m of queries) {
    calls = [];
    started = performance.now();
    const page = await searchOrgs(deps, { q: m.q, sort: m.sort as OrgSort, limit: 20, offset: m.offset });
    const ms = performance.now() - started;
    console.log(
      `  - q=${JSON.stringify(m.q)} sort=${m.sort} offset=${m.offset}: mix ${m.ms.toFixed(0)}, replay ${ms.toFixed(0)}, total ${page.total}`,
    );
    for (const c of calls)
      console.log(
        `      at ${c.at.toFixed(0)}: ${c.ms.toFixed(0)} (meili ${c.meiliMs}) hits ${c.total}: ${c.what}`,
      );
  }
}

async function main() {
  const t0 = Date.now();
  const reg = await generateRegister({ orgs: ORGS, parts: PARTS, dir: '/tmp/bizdir-register' });
  const built = buildBizdir();
  report('bizdir processes', `${BIZDIR_HOW}${built > 0 ? ` (dist/ built in ${s(built)} s)` : ''}`);
  let names = readFileSync(reg.namesFile, 'utf8').split('\n').filter(Boolean);
  const shape = describeNames(names);
  report(
    'register',
    `${ORGS} Orgs in ${PARTS} part(s), ${shape.distinctWords} distinct words, mean name ${shape.meanLength.toFixed(1)} chars (generated/cached in ${s(Date.now() - t0)} s)`,
  );

  mkdirSync(MEILI_DIR, { recursive: true });
  if (MEILI_MEMORY !== undefined) evictFromPageCache(MEILI_DIR);
  else if (flag('prewarm')) {
    // A restarted Meilisearch with its index read into the page cache first, as an operator would.
    const started = Date.now();
    const bytes = readIntoPageCache(MEILI_DIR);
    report('index read into the page cache (--prewarm)', `${mb(bytes)} MiB in ${s(Date.now() - started)} s`);
  }
  const meiliServer = await startMeiliServer({
    dataDir: MEILI_DIR,
    masterKey: `bench-${tag}-master-key`,
    maxIndexingMemory: INDEXING_MEMORY,
    ...(INDEXING_THREADS ? { maxIndexingThreads: INDEXING_THREADS } : {}),
    // As shipped: LMDB's write map unless MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE=false.
    reduceIndexingMemory: WRITE_MAP,
  });
  const meiliPid = meiliServer.process.pid!;
  let cap: MemoryCap | undefined;
  if (MEILI_MEMORY !== undefined) {
    cap = capMemory(meiliPid, MEILI_MEMORY, `bizdir-bench-${tag}`);
    report('Meilisearch memory limit', `${mb(MEILI_MEMORY)} MiB (cgroup ${cap.path})`);
  }
  const meili = new Meilisearch({ host: meiliServer.url, apiKey: meiliServer.masterKey, timeout: 600_000 });
  if (REUSE === undefined) await admin(`create database ${dbName}`);
  const { db, close } = createDb(dbUrl, { max: 4 });
  if (REUSE !== undefined && MEILI_MEMORY === undefined && flag('prewarm')) {
    // The API reads each page of results from Postgres (prepareOrgsByIds): warm its tables too, as an
    // operator would after a restart, or the mix measures first reads of random Orgs from disk
    // (20 Orgs: 10.6 ms p50 cold, 2.9 ms warm, 5.7M Orgs). pg_prewarm ships with Postgres's contrib.
    const started = Date.now();
    try {
      await sql`create extension if not exists pg_prewarm`.execute(db);
      const { rows } = await sql<{ blocks: string }>`
        select sum(pg_prewarm(c.oid::regclass, 'read'))::text as blocks
        from pg_class c
        where c.relname in ('orgs', 'orgs_pkey', 'addresses', 'addresses_pkey', 'locations',
          'locations_one_default', 'locations_org_id_code_key', 'search_outbox')`.execute(db);
      report(
        'Postgres tables read into the page cache (--prewarm)',
        `${mb(Number(rows[0]?.blocks ?? 0) * 8192)} MiB in ${s(Date.now() - started)} s`,
      );
    } catch (error) {
      report('Postgres tables read into the page cache (--prewarm)', `not done: ${(error as Error).message}`);
    }
  }
  const env = {
    DATABASE_URL: dbUrl,
    REDIS_URL: REDIS,
    QUEUE_PREFIX: prefix,
    MEILI_URL: meiliServer.url,
    MEILI_MASTER_KEY: meiliServer.masterKey,
    MEILI_INDEX: INDEX,
    // The worker measures the index's files for a `--when-grown` reindex schedule.
    MEILI_DB_PATH: MEILI_DB,
  };
  let api: ChildProcess | undefined;
  const benchStarted = Date.now();
  const watch = new MemoryWatch(meiliPid);
  // Each memory sample is labelled with the bench's phase and the task Meilisearch is processing
  // (its type, and which index: the live one, a catch-up or a reindex build), so a peak is placed.
  let phase = 'setup';
  let polling = true;
  const labelPoll = (async () => {
    while (polling) {
      const task = await meili.tasks
        .getTasks({ statuses: ['processing'], limit: 1 })
        .then((r) => r.results[0])
        // Meilisearch busy or restarting: the sample is labelled with the phase alone.
        .catch(() => undefined);
      const which = task?.indexUid?.includes('__catchup_')
        ? 'catch-up build'
        : task?.indexUid?.includes('__build_')
          ? 'reindex build'
          : task?.indexUid?.startsWith('plain_')
            ? 'plain word index'
            : task?.indexUid
              ? 'live index'
              : '';
      watch.label = task ? `${phase}: ${task.type} (${which || 'no index'})` : `${phase}: idle`;
      await sleep(1000);
    }
  })();
  /**
   * The end of every run, also when it is stopped by a signal (Ctrl-C, `kill`): the bizdir processes
   * stopped, the database dropped and Meilisearch's data removed (unless kept), Meilisearch stopped,
   * its memory cgroup and the run's queue keys removed. Runs once.
   */
  let cleaned: Promise<void> | undefined;
  const cleanUp = () =>
    (cleaned ??= (async () => {
      watch.stop();
      polling = false;
      for (const child of [...children]) {
        child.kill('SIGTERM');
        await waitExit(child);
      }
      await close();
      if (!KEEP) await admin(`drop database if exists ${dbName} with (force)`);
      await meiliServer.stop();
      cap?.remove();
      const redis = new Redis(REDIS);
      for (let cursor = '0'; ; ) {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        if (keys.length > 0) await redis.del(...keys);
        cursor = next;
        if (cursor === '0') break;
      }
      redis.disconnect();
      if (KEEP)
        console.log(
          `kept: database ${dbName}, Meilisearch data ${MEILI_DIR}; measure again with --reuse ${tag}`,
        );
      else rmSync(MEILI_DIR, { recursive: true, force: true });
    })());
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`${signal}: stopping the run and cleaning up`);
    void cleanUp().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await migrateToLatest(db);
    await ensureOrgIndex(meili, INDEX);
    // Stopped with the other bizdir processes at the end (cleanUp).
    bizdir(['worker'], env);

    /** Waits until the index holds `expected` Orgs with no change left to index (no time limit: the bench reports how long). */
    const untilSearchable = async (expected: number) => {
      for (;;) {
        const pending = await pendingChanges(db);
        const stats = await meili.index(INDEX).getStats();
        if (pending === 0 && !stats.isIndexing && stats.numberOfDocuments === expected) return;
        await sleep(1000);
      }
    };

    // Import (unless reusing a kept run), then wait for the index to catch up.
    let t = Date.now();
    figures.orgs = ORGS;
    phase = 'import';
    // A backlog this size is caught up by a rebuild (search/catch-up.ts), during the import
    // (SEARCH_REBUILD_DURING_IMPORT=on) or after it: note when it ran.
    let rebuildSeen: number | undefined;
    let rebuildGone: number | undefined;
    let watchingRebuild = true;
    const rebuildWatch = (async () => {
      while (watchingRebuild) {
        const building = await db
          .selectFrom('search_reindex')
          .select('target')
          .execute()
          // A poll that fails is a poll missed: the next one looks again.
          .catch(() => []);
        if (building.some((b) => b.target.includes('__catchup_'))) rebuildSeen ??= Date.now();
        else if (rebuildSeen !== undefined) rebuildGone ??= Date.now();
        await sleep(500);
      }
    })();
    if (REUSE === undefined) {
      const code = await waitExit(bizdir(['import', 'registrar', ...reg.files, '--wait'], env));
      if (code !== 0) throw new Error(`import exited ${code}`);
    }
    const importMs = Date.now() - t;
    if (REUSE === undefined) {
      // The same split as bench:import prints (the second figure also holds the command's own start
      // and its wait for the worker, about a second).
      const readMs = await partsReadMs(db);
      report(
        'import',
        `${s(importMs)} s, ${Math.round(ORGS / (importMs / 1000))} rows/s ` +
          `(read + stage ${s(readMs)} s, merge + settle ${s(importMs - readMs)} s)`,
      );
      figures.importRowsPerS = Math.round(ORGS / (importMs / 1000));
    } else {
      report('import', `none: reusing run ${REUSE}`);
    }
    phase = 'after the import';
    await untilSearchable(ORGS);
    watchingRebuild = false;
    await rebuildWatch;
    report(
      'searchable',
      `${s(Date.now() - t)} s after the import started (${s(Date.now() - t - importMs)} s after it ended)`,
    );
    if (rebuildSeen !== undefined) {
      // The rebuild that waits for the import can be seen just before `--wait` returns.
      const after = rebuildSeen - t - importMs;
      report(
        'caught up by a rebuild',
        `started ${after >= -2_000 ? `${s(Math.max(0, after))} s after the import ended` : `${s(rebuildSeen - t)} s after the import started`}, took ${s((rebuildGone ?? Date.now()) - rebuildSeen)} s, ended ${s((rebuildGone ?? Date.now()) - t - importMs)} s after the import`,
      );
    }
    const live = await meili.getStats();
    // On disk = the blocks the data folder holds (du), not /stats databaseSize: under the write
    // map that is the size of a sparse file as large as the whole map (2 TiB).
    const liveDisk = allocatedBytes(MEILI_DB);
    figures.bytesPerOrgAfterSync = Math.round(liveDisk / ORGS);
    report(
      'index size after sync',
      `${mb(liveDisk)} MiB on disk, ${(liveDisk / ORGS).toFixed(0)} B/Org (used ${(live.usedDatabaseSize / ORGS).toFixed(0)} B/Org)`,
    );
    watch.sample();
    report(
      'Meilisearch RSS after sync',
      `peak ${mb(memory(meiliPid).peak)} MiB (anon peak ${mb(watch.peakAnon)}, file-backed peak ${mb(watch.peakFile)})`,
    );

    phase = 'queries';
    // The API with auth and credits in its own process (`bizdir serve`), as it is deployed. Not in
    // this one: this process holds the register's names twice over for the brute-force totals, and
    // a collection of that heap would land in the middle of the requests it times.
    const port = await freePort();
    // The admin token: the API then sends the detailed Server-Timing (search-timing.ts), which the
    // tail's breakdown below reads.
    const adminToken = `bench-${prefix}`;
    api = bizdir(
      ['serve'],
      {
        ...env,
        HOST: '127.0.0.1',
        PORT: String(port),
        DOMAIN_SUFFIX: 'bizdir.bench',
        ADMIN_TOKEN: adminToken,
      },
      (process.env.BENCH_API_NODE_ARGS ?? '').split(' ').filter(Boolean),
    );
    await untilListening(`http://127.0.0.1:${port}/openapi.json`, api);
    const account = await createAccount(db, {
      name: 'bench',
      credits: 100_000_000,
      anchorDate: '2026-01-01',
    });
    const base = `http://127.0.0.1:${port}/v1/org/search`;
    const ask = async (q: string, sort: string, offset: number) => {
      const url = `${base}?q=${encodeURIComponent(q)}&sort=${sort}&offset=${offset}&limit=20&api_key=${account.api_key}`;
      const started = performance.now();
      const res = await fetch(url, { headers: { authorization: `Bearer ${adminToken}` } });
      const body = (await res.json()) as { orgs?: { total: number } };
      if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`);
      const timing = parseServerTiming(res.headers.get('server-timing'));
      return { ms: performance.now() - started, total: body.orgs?.total ?? -1, timing };
    };

    // The mix, with every total against brute force over the generated names. Brute force first, so
    // its scans of millions of names (and their garbage) fall outside the timings.
    const mix = queryMix(names, QUERIES);
    let truth = bruteForceTotals(names, mix);
    const loadPrep = LOAD ? prepareSearchLoad(names, LOAD_OPTIONS) : undefined;
    // Nothing below needs the names. Without them this process's heap is small again, and so is the
    // collector's marking, which walks what is live: with them (about 900 MB at 5.7M) one marking
    // ran 330 ms of steps in the middle of the timed requests.
    names = [];
    // Warm-up. A freshly synced large index is mostly cold (at 5.7M its first query took longer than
    // the API's 2 s Meilisearch timeout and got a 503), so the warm-up retries, and reports what the
    // cold queries met, instead of stopping the bench.
    const warm = { queries: 0, unavailable: 0, slowestMs: 0 };
    for (const m of mix.slice(0, 20)) {
      for (let attempt = 0; ; attempt++) {
        const started = performance.now();
        try {
          await ask(m.q, m.sort, m.offset);
          warm.queries++;
          warm.slowestMs = Math.max(warm.slowestMs, performance.now() - started);
          break;
        } catch (error) {
          if (!String(error).includes(': 503 ') || attempt >= 10) throw error;
          warm.unavailable++;
          await sleep(1_000);
        }
      }
    }
    report(
      'warm-up (cold index)',
      `${warm.queries} queries, ${warm.unavailable} answered 503 and were retried, slowest success ${warm.slowestMs.toFixed(0)} ms`,
    );
    if (loadPrep) {
      phase = 'load';
      await searchLoad(
        {
          db,
          meili,
          meiliUrl: meiliServer.url,
          meiliKey: meiliServer.masterKey,
          tag,
          orgs: ORGS,
          apiOrigin: `http://127.0.0.1:${port}`,
          apiKey: account.api_key,
          adminToken,
          domainSuffix: 'bizdir.bench',
          pids: { api: api.pid!, meilisearch: meiliPid },
          // A second API for the skewed mix with the answer cache on (SEARCH_ANSWER_CACHE): the first
          // keeps the shipped default.
          startApi: async (extra: Record<string, string>) => {
            const cachedPort = await freePort();
            const child = bizdir(['serve'], {
              ...env,
              HOST: '127.0.0.1',
              PORT: String(cachedPort),
              DOMAIN_SUFFIX: 'bizdir.bench',
              ADMIN_TOKEN: adminToken,
              ...extra,
            });
            await untilListening(`http://127.0.0.1:${cachedPort}/openapi.json`, child);
            return { origin: `http://127.0.0.1:${cachedPort}`, pid: child.pid! };
          },
          report,
          figures,
        },
        LOAD_OPTIONS,
        loadPrep,
      );
      console.log('\n| measure | figure |\n|---|---|');
      for (const [k, v] of results) console.log(`| ${k} | ${v} |`);
      console.log(JSON.stringify({ registerBench: figures }, null, 2));
      return;
    }
    // Meilisearch's page faults: a minor fault is its first touch of an index page already in the
    // page cache (each Meilisearch process maps its files anew), a major one a read from disk.
    const faults = () => {
      try {
        const f = readFileSync(`/proc/${meiliPid}/stat`, 'utf8').split(') ')[1]!.split(' ');
        return { minor: Number(f[7]), major: Number(f[9]) };
      } catch {
        return { minor: Number.NaN, major: Number.NaN };
      }
    };
    type Answer = { ms: number; q: string; sort: string; offset: number; timing: Record<string, number> };
    /**
     * One query of the mix. A 503 (a Meilisearch call over the API's timeout) is counted and reported,
     * not a stop: under a memory limit a cold index can answer some queries that slowly. Its time
     * counts as the latency, and it has no total.
     */
    const askCounting503 = async (m: { q: string; sort: string; offset: number }) => {
      const started = performance.now();
      try {
        return { ...(await ask(m.q, m.sort, m.offset)), unavailable: false };
      } catch (error) {
        if (!String(error).includes(': 503 ')) throw error;
        return { ms: performance.now() - started, total: Number.NaN, timing: {}, unavailable: true };
      }
    };
    /** One pass over the mix: latencies, totals against brute force, and where the slowest 1 % went. */
    const runMix = async (label: string) => {
      const lat: number[] = [];
      const inMixOrder: number[] = [];
      let wrong = 0;
      const slowest: Answer[] = [];
      let unavailable = 0;
      const faultsBefore = faults();
      const beside = watchBeside(db, meili);
      for (const m of mix) {
        const r = await askCounting503(m);
        if (r.unavailable) unavailable++;
        lat.push(r.ms);
        inMixOrder.push(r.ms);
        slowest.push({ ms: r.ms, ...m, timing: r.timing });
        const f = foldName(m.q);
        if (!Number.isNaN(r.total) && truth.get(f) !== r.total) {
          wrong++;
          console.log(
            `  total differs: q=${JSON.stringify(m.q)} api ${r.total} vs brute force ${truth.get(f)}`,
          );
        }
      }
      const faultsAfter = faults();
      const besideMix = await beside.stop();
      lat.sort((a, b) => a - b);
      report(
        label,
        `${mix.length} queries, ${truth.size} distinct terms: p50 ${pct(lat, 50).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms, max ${lat[lat.length - 1]!.toFixed(1)} ms`,
      );
      report(`${label}: answered 503 (over the API's Meilisearch timeout)`, String(unavailable));
      report(`${label}: totals differing from brute force`, String(wrong));
      report(`${label}: beside it`, besideMix);
      report(
        `${label}: Meilisearch page faults`,
        `${faultsAfter.minor - faultsBefore.minor} minor (first touches of cached index pages), ${faultsAfter.major - faultsBefore.major} major (reads from disk)`,
      );
      slowest.sort((a, b) => b.ms - a.ms);
      console.log(
        `  slowest: ${slowest
          .slice(0, 5)
          .map((x) => `${x.ms.toFixed(0)} ms q=${JSON.stringify(x.q)} sort=${x.sort} offset=${x.offset}`)
          .join('; ')}`,
      );
      // Where the tail's time went, from each answer's Server-Timing (search/search-timing.ts): in
      // Meilisearch (its own processing, and the rest of its calls' time in flight: transport,
      // queueing), in Postgres, in the API besides both (event loop, collection), or outside the API.
      const tail = slowest.slice(0, Math.max(1, Math.ceil(slowest.length / 100)));
      const parts = (x: Answer) => {
        const t = x.timing;
        const total = t.total ?? Number.NaN;
        const search = t.search ?? 0;
        const self = Math.min(t['search-self'] ?? 0, search);
        const db = t.db ?? 0;
        return { self, transport: search - self, db, api: total - search - db, outside: x.ms - total };
      };
      const sum = { self: 0, transport: 0, db: 0, api: 0, outside: 0 };
      for (const x of tail) for (const [k, v] of Object.entries(parts(x))) sum[k as keyof typeof sum] += v;
      const tailMs = tail.reduce((a, x) => a + x.ms, 0);
      const share = (v: number) => `${v.toFixed(0)} ms (${((100 * v) / tailMs).toFixed(0)} %)`;
      report(
        `${label}: the slowest 1 % (${tail.length} queries, ${tailMs.toFixed(0)} ms), by Server-Timing`,
        `Meilisearch processing ${share(sum.self)}, rest of its calls in flight ${share(sum.transport)}, Postgres ${share(sum.db)}, the API besides ${share(sum.api)}, outside the API ${share(sum.outside)}`,
      );
      for (const x of tail) {
        const p = parts(x);
        console.log(
          `    ${x.ms.toFixed(0)} ms q=${JSON.stringify(x.q)} sort=${x.sort} offset=${x.offset}: meili ${p.self.toFixed(0)} + in flight ${p.transport.toFixed(0)} (${x.timing.search !== undefined ? `slowest call ${(x.timing['search-slowest'] ?? 0).toFixed(0)}` : 'no timing'}), db ${p.db.toFixed(0)}, api ${p.api.toFixed(0)}, outside ${p.outside.toFixed(0)}`,
        );
      }
      return { lat, inMixOrder, wrong, unavailable, slowest };
    };
    /**
     * The mix asked again and again until `work` settles (the rebuild step): what an API user sees
     * while an index is rebuilt beside the live one. One report line for all the answers.
     */
    const mixWhile = async (work: Promise<unknown>) => {
      let done = false;
      void work.then(
        () => {
          done = true;
        },
        () => {
          done = true;
        },
      );
      const lat: number[] = [];
      const inApi: number[] = [];
      let wrong = 0;
      let unavailable = 0;
      let passes = 0;
      while (!done) {
        passes++;
        for (const m of mix) {
          if (done) break;
          const r = await askCounting503(m);
          if (r.unavailable) unavailable++;
          lat.push(r.ms);
          // The API's own time (Server-Timing `total`), without the client and the transport.
          if (r.timing.total !== undefined) inApi.push(r.timing.total);
          if (!Number.isNaN(r.total) && truth.get(foldName(m.q)) !== r.total) wrong++;
        }
      }
      lat.sort((a, b) => a - b);
      inApi.sort((a, b) => a - b);
      figures.duringRebuildP99Ms = lat.length > 0 ? pct(lat, 99) : Number.NaN;
      report(
        'API search during the rebuild',
        lat.length === 0
          ? 'no answer before the rebuild ended'
          : `${lat.length} answers (${passes} passes over the mix): p50 ${pct(lat, 50).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms, max ${lat[lat.length - 1]!.toFixed(1)} ms (inside the API, by Server-Timing: p50 ${inApi.length > 0 ? pct(inApi, 50).toFixed(1) : '-'}, p99 ${inApi.length > 0 ? pct(inApi, 99).toFixed(1) : '-'} ms); ${unavailable} answered 503; ${wrong} totals differing from brute force`,
      );
    };
    const { lat, inMixOrder, wrong, unavailable, slowest } = await runMix('API search (mix)');
    const apiP99 = pct(lat, 99);
    figures.unavailable = unavailable;
    figures.p50Ms = pct(lat, 50);
    figures.p99Ms = apiP99;
    figures.maxMs = lat[lat.length - 1]!;
    figures.totalsWrong = wrong;
    // Later passes run the same mix on the same processes: what is left once Meilisearch has mapped
    // (first touched) the index pages the mix needs, as on a server that has been answering a while.
    for (let pass = 2; pass <= MIX_PASSES; pass++) {
      const again = await runMix(`API search (mix, pass ${pass}, the same processes)`);
      figures[`pass${pass}P99Ms`] = pct(again.lat, 99);
      figures.totalsWrong += again.wrong;
    }
    if (EXPLAIN > 0) await explainQueries(meili, db, slowest.slice(0, EXPLAIN));

    // A rename becomes searchable: through the API (which searches changes not yet in the index
    // beside it: search/fresh-changes.ts), and in the index itself (the outbox, the worker's index
    // job and Meilisearch's own update).
    phase = 'renames';
    const renames: number[] = [];
    const inIndex: number[] = [];
    const indexOnly = { db, meili, indexUid: INDEX, domainSuffix: 'bizdir.bench', freshChanges: false };
    const ids = await db.selectFrom('orgs').select(['id', 'name']).orderBy('id').limit(20).execute();
    for (const [i, { id }] of ids.entries()) {
      // The number keeps every token unique (coined words can repeat) and none inside another.
      const token = `renamed${String(i).padStart(2, '0')}${coined(9_000_000 + i).toLowerCase()}`;
      const started = Date.now();
      await db
        .updateTable('orgs')
        .set({ name: `${token.toUpperCase()} ${i} LTD` })
        .where('id', '=', id)
        .execute();
      for (;;) {
        if ((await ask(token, 'name', 0)).total === 1) break;
        if (Date.now() - started > 60_000) throw new Error('rename not searchable after 60 s');
        await sleep(50);
      }
      renames.push(Date.now() - started);
      for (;;) {
        if ((await searchOrgs(indexOnly, { q: token, sort: 'name', limit: 1, offset: 0 })).total === 1) break;
        if (Date.now() - started > 120_000) throw new Error('rename not in the index after 120 s');
        await sleep(50);
      }
      inIndex.push(Date.now() - started);
    }
    // Give the Orgs their generated names back: the answers after this (the mix during the rebuild,
    // a kept run measured again) are checked against the brute force of the generated names.
    for (const { id, name } of ids) await db.updateTable('orgs').set({ name }).where('id', '=', id).execute();
    renames.sort((a, b) => a - b);
    inIndex.sort((a, b) => a - b);
    figures.renameP50Ms = pct(renames, 50);
    figures.renameInIndexP50Ms = pct(inIndex, 50);
    report(
      'rename searchable (API)',
      `p50 ${pct(renames, 50)} ms, max ${renames[renames.length - 1]} ms (${renames.length} renames)`,
    );
    report('rename in the index itself', `p50 ${pct(inIndex, 50)} ms, max ${inIndex[inIndex.length - 1]} ms`);

    if (!flag('skip-rebuild')) {
      phase = 'rebuild';
      // Plain word index of the same names, then the real rebuild, in the same run. `--skip-plain`
      // runs the rebuild alone (to move a kept run's index to this checkout's format, say).
      let plainMs: number | undefined;
      if (!flag('skip-plain')) {
        const plain = `plain_${tag}`;
        t = Date.now();
        await succeeded(meili.createIndex(plain, { primaryKey: 'id' }));
        const rows = await db.selectFrom('orgs').select(['id', 'name']).orderBy('id').execute();
        const inFlight: Promise<unknown>[] = [];
        for (let i = 0; i < rows.length; i += 20_000) {
          inFlight.push(succeeded(meili.index(plain).addDocuments(rows.slice(i, i + 20_000)), 4 * 3_600_000));
          if (inFlight.length >= 4) await inFlight.shift();
        }
        await Promise.all(inFlight);
        plainMs = Date.now() - t;
        const plainBytes = allocatedBytes(MEILI_DB) - liveDisk;
        await succeeded(meili.deleteIndex(plain));
        figures.plainS = plainMs / 1000;
        report('plain word index', `${s(plainMs)} s (about ${(plainBytes / ORGS).toFixed(0)} B/Org on disk)`);
      }

      const before = allocatedBytes(MEILI_DB);
      let peakDisk = before;
      // A few stat calls per sample: often enough that a short rebuild (small --orgs) is seen too.
      const diskTimer = setInterval(() => {
        peakDisk = Math.max(peakDisk, allocatedBytes(MEILI_DB));
      }, 250);
      t = Date.now();
      if (flag('mix-during-rebuild')) {
        // In a process of its own, as an operator runs it (`bizdir reindex --wait`): the queries'
        // times then hold none of the rebuild's own work on this process's event loop.
        const rebuilt = waitExit(bizdir(['reindex', '--wait', '--json'], env)).then((code) => {
          if (code !== 0) throw new Error(`bizdir reindex --wait exited ${code}`);
        });
        await mixWhile(rebuilt);
        await rebuilt;
      } else await reindex({ db, meili, indexUid: INDEX });
      clearInterval(diskTimer);
      const rebuildMs = Date.now() - t;
      figures.rebuildS = rebuildMs / 1000;
      report(
        'rebuild',
        plainMs === undefined
          ? `${s(rebuildMs)} s (no plain word index: --skip-plain)`
          : `${s(rebuildMs)} s = ${(rebuildMs / plainMs).toFixed(2)}x the plain word index (same run)`,
      );
      report(
        'rebuild extra disk',
        `${mb(peakDisk - before)} MiB peak (${((peakDisk - before) / ORGS).toFixed(0)} B/Org) against ${mb(before)} MiB before`,
      );
      const after = await meili.getStats();
      const afterDisk = allocatedBytes(MEILI_DB);
      figures.bytesPerOrg = Math.round(afterDisk / ORGS);
      figures.rebuildExtraBytesPerOrg = Math.round((peakDisk - before) / ORGS);
      report(
        'index size after rebuild',
        `${(afterDisk / ORGS).toFixed(0)} B/Org on disk (used ${(after.usedDatabaseSize / ORGS).toFixed(0)} B/Org)`,
      );
    }
    watch.stop();
    polling = false;
    await labelPoll;
    console.log('  Meilisearch memory by phase and task it was processing (500 ms samples):');
    for (const line of watch.labelLines()) console.log(`    ${line}`);
    await printBatches(meili, benchStarted);
    figures.meiliPeakRssMiB = Math.round(memory(meiliPid).peak / 2 ** 20);
    report(
      'Meilisearch peak RSS',
      `${mb(memory(meiliPid).peak)} MiB (VmHWM; sampled peaks: anon ${mb(watch.peakAnon)} MiB, file-backed ${mb(watch.peakFile)} MiB, max indexing memory ${INDEXING_MEMORY}, indexing threads ${INDEXING_THREADS ?? 'default'}, write map ${WRITE_MAP ? 'on' : 'off'})`,
    );
    if (cap) {
      figures.meiliCgroupPeakMiB = Math.round(cap.peakBytes() / 2 ** 20);
      report(
        'Meilisearch memory cgroup',
        `peak ${mb(cap.peakBytes())} MiB of the ${mb(cap.limitBytes)} MiB limit (anonymous memory and page cache), limit reached ${cap.limitHits()} times`,
      );
    }

    if (!flag('skip-pg')) {
      // The same mix on pg_trgm: a GIN trigram index on the same folded expression.
      const expr = `lower(regexp_replace(name, '\\s+', ' ', 'g'))`;
      t = Date.now();
      await admin('create extension if not exists pg_trgm', dbUrl);
      await admin(`create index orgs_name_trgm on orgs using gin ((${expr}) gin_trgm_ops)`, dbUrl);
      await admin('analyze orgs', dbUrl);
      console.log(`  pg_trgm index built in ${s(Date.now() - t)} s`);
      // Ties by stable domain: the uid, computed from the id (Orgs store none since migration 0023).
      const uid = 'bizdir_uid(id)';
      const order: Record<string, string> = {
        name: `${expr} collate "C", ${uid}`,
        '-name': `${expr} collate "C" desc, ${uid}`,
        updated: `updated, ${uid}`,
        '-updated': `updated desc, ${uid}`,
        relevance: uid,
      };
      const client = new pg.Client({ connectionString: dbUrl });
      await client.connect();
      await client.query(`set statement_timeout = '60s'`);
      const pgLat: number[] = [];
      const pgMix = mix.slice(0, PG_QUERIES);
      try {
        for (const m of pgMix) {
          const like = `%${foldName(m.q).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
          const started = performance.now();
          await client.query(`select count(*) from orgs where ${expr} like $1`, [like]);
          await client.query(
            `select id from orgs where ${expr} like $1 order by ${order[m.sort]} offset $2 limit 20`,
            [like, m.offset],
          );
          pgLat.push(performance.now() - started);
        }
      } finally {
        await client.end();
      }
      pgLat.sort((a, b) => a - b);
      // The API's p99 over the same queries (the whole mix unless --pg-queries took fewer).
      const apiSame = inMixOrder.slice(0, pgMix.length).sort((a, b) => a - b);
      const apiSameP99 = pct(apiSame, 99);
      figures.pgP99Ms = pct(pgLat, 99);
      figures.pgQueries = pgMix.length;
      figures.apiP99OnPgQueriesMs = apiSameP99;
      report(
        `pg_trgm (${pgMix.length < mix.length ? `the mix's first ${pgMix.length} queries` : 'same mix'}, count + page)`,
        `p50 ${pct(pgLat, 50).toFixed(1)} ms, p99 ${pct(pgLat, 99).toFixed(1)} ms, max ${pgLat[pgLat.length - 1]!.toFixed(1)} ms; the API on the same queries p99 ${apiSameP99.toFixed(1)} ms: ${(pct(pgLat, 99) / apiSameP99).toFixed(1)}x faster at p99`,
      );
    }
    /**
     * One month's snapshot imported with `--full` beside the index sync (see --next-month): the
     * import and its counts, when the index has caught up, its size, and the mix against `names`.
     */
    const monthStep = async (
      label: string,
      files: string[],
      names: string[],
      expected: number,
      rowCount: number,
    ) => {
      truth = bruteForceTotals(names, mix);
      t = Date.now();
      const monthStarted = t;
      const code = await waitExit(bizdir(['import', 'registrar', ...files, '--full', '--wait'], env));
      if (code !== 0) throw new Error(`${label}: the import exited ${code}`);
      const monthMs = Date.now() - t;
      const readMs = await partsReadMs(db);
      const { rows } = await sql<
        Record<'inserted' | 'updated' | 'unchanged' | 'rejected' | 'closed', number>
      >`
        select inserted, updated, unchanged, rejected, closed from import_runs order by id desc limit 1`.execute(
        db,
      );
      const r = rows[0]!;
      report(
        `${label}: import (--full)`,
        `${s(monthMs)} s, ${Math.round(rowCount / (monthMs / 1000))} rows/s (read + stage ${s(readMs)} s, merge + settle ${s(monthMs - readMs)} s): ${r.inserted} inserted, ${r.updated} updated, ${r.unchanged} unchanged, ${r.rejected} rejected, ${r.closed} marked gone`,
      );
      await untilSearchable(expected);
      report(
        `${label}: searchable`,
        `${s(Date.now() - t)} s after the import started (${s(Date.now() - t - monthMs)} s after it ended)`,
      );
      const monthStats = await meili.getStats();
      const monthDisk = allocatedBytes(MEILI_DB);
      report(
        `${label}: index size`,
        `${mb(monthDisk)} MiB on disk, ${(monthDisk / expected).toFixed(0)} B/Org (used ${(monthStats.usedDatabaseSize / expected).toFixed(0)} B/Org)`,
      );
      for (let pass = 1; pass <= MIX_PASSES; pass++) {
        const again = await runMix(
          pass === 1
            ? `${label}: API search (mix)`
            : `${label}: API search (mix, pass ${pass}, the same processes)`,
        );
        figures.totalsWrong = (figures.totalsWrong ?? 0) + again.wrong;
      }
      console.log(`  ${label} in Meilisearch (its import, sync and mix):`);
      await printBatches(meili, monthStarted);
    };
    if (NEXT_MONTH) {
      // The register a month later (bench/register/generate.ts generateNextMonth), imported as the
      // full snapshot it is, with the index following the import's commits as it does every month.
      phase = 'next month';
      const genStarted = Date.now();
      const month = await generateNextMonth(reg, PARTS);
      const c = month.counts;
      report(
        'next month',
        `${c.rows} rows: ${c.gone} companies gone, ${c.added} new, ${c.renamed} renamed, ${c.moved} moved, ${c.confirmed} with only kept-out columns changed (generated/cached in ${s(Date.now() - genStarted)} s)`,
      );
      const afterNames = readFileSync(month.namesAfterFile, 'utf8').split('\n').filter(Boolean);
      const addedNames = afterNames.slice(ORGS);
      await monthStep('next month', month.files, afterNames, ORGS + c.added, c.rows);
      afterNames.length = 0;
      if (MONTH_BACK) {
        // One more month of the same size: the first month's files again. The gone companies come
        // back, the renamed and moved ones return to what they were, the new ones are missing (marked
        // gone, still searchable). Whether the index's file grows again by as much, or reuses the
        // pages the first month's sync freed, is what this month is for.
        phase = 'month after';
        const names = readFileSync(reg.namesFile, 'utf8').split('\n').filter(Boolean);
        await monthStep(
          'month after (the first files again)',
          reg.files,
          [...names, ...addedNames],
          ORGS + c.added,
          ORGS,
        );
      }
    }

    if (flag('scheduled-reindex')) {
      // After the month (or months), the rebuild an operator schedules instead of remembering it.
      phase = 'scheduled reindex';
      const expected = (await meili.index(INDEX).getStats()).numberOfDocuments;
      const r = await scheduledReindex(
        {
          db,
          bizdir: (cmd) => waitExit(bizdir(cmd, env)),
          indexBytes: () => allocatedBytes(MEILI_DB),
        },
        expected,
        1.1,
      );
      figures.scheduledReindexBeforeBytesPerOrg = Math.round(r.beforeBytesPerOrg);
      figures.scheduledReindexAfterBytesPerOrg = Math.round(r.afterBytesPerOrg);
      // The rebuild step's index, else the one the catch-up build made after the first import (also
      // built from scratch).
      const fresh = figures.bytesPerOrg ?? figures.bytesPerOrgAfterSync;
      const ratio = (b: number) =>
        fresh ? ` = ${(b / fresh).toFixed(2)}x the fresh build (${fresh} B/Org)` : '';
      report(
        'scheduled reindex (--when-grown 1.1)',
        `${r.status} in ${s(r.runMs)} s from the schedule's save (${r.reason ?? 'no reason given'}): ` +
          `${r.beforeBytesPerOrg.toFixed(0)} B/Org before${ratio(r.beforeBytesPerOrg)}, ` +
          `${r.afterBytesPerOrg.toFixed(0)} B/Org after${ratio(r.afterBytesPerOrg)}`,
      );
    }

    console.log('\n| measure | figure |\n|---|---|');
    for (const [k, v] of results) console.log(`| ${k} | ${v} |`);
    console.log(JSON.stringify({ registerBench: figures }, null, 2));
  } finally {
    await cleanUp();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * Meilisearch's batches since `since` (the tasks it processed together), grouped by index and task
 * type: how many, the most tasks and documents in one, and their total and longest time.
 */
async function printBatches(meili: Meilisearch, since: number): Promise<void> {
  const groups = new Map<string, { n: number; tasks: number; docs: number; ms: number; longest: number }>();
  let from: number | undefined;
  for (;;) {
    const page = await meili.batches.getBatches({ limit: 1000, ...(from === undefined ? {} : { from }) });
    for (const b of page.results) {
      // A kept Meilisearch (--reuse) also holds the batches of the run that built it.
      if (Date.parse(b.startedAt) < since) continue;
      const uids = Object.keys(b.stats.indexUids ?? {});
      const kind = uids.some((u) => u.includes('__catchup_'))
        ? 'catch-up build'
        : uids.some((u) => u.includes('__build_'))
          ? 'reindex build'
          : uids.length > 0
            ? 'live index'
            : 'no index';
      const types = Object.keys(b.stats.types ?? {}).join('+');
      const key = `${kind}, ${types}`;
      const ms = durationMs(b.duration);
      const g = groups.get(key) ?? { n: 0, tasks: 0, docs: 0, ms: 0, longest: 0 };
      g.n += 1;
      g.tasks = Math.max(g.tasks, b.stats.totalNbTasks);
      g.docs = Math.max(g.docs, Number((b.details as { receivedDocuments?: number }).receivedDocuments ?? 0));
      g.ms += ms;
      g.longest = Math.max(g.longest, ms);
      groups.set(key, g);
    }
    if (page.next === null || page.next === undefined) break;
    from = page.next;
  }
  console.log(
    '  Meilisearch batches (index, task types: count, most tasks and documents in one, total and longest time):',
  );
  for (const [key, g] of groups)
    console.log(
      `    ${key}: ${g.n} batches, up to ${g.tasks} tasks and ${g.docs} documents, ${(g.ms / 1000).toFixed(1)} s in all, longest ${(g.longest / 1000).toFixed(1)} s`,
    );
}

/** The machine's CPU time so far, all cores (/proc/stat, in clock ticks): busy, and in all. */
function cpuTicks(): { busy: number; all: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const all = fields.reduce((a, b) => a + b, 0);
  // idle and iowait are the fourth and fifth fields.
  return { busy: all - fields[3]! - (fields[4] ?? 0), all };
}

/**
 * What ran beside a mix pass: the machine's busy share of its cores, Postgres's autovacuum workers
 * (sampled every 250 ms: what they worked on), and Meilisearch's batches that overlapped the pass.
 * A pass slower than the next one on the same index with no reads from disk points at one of these.
 */
function watchBeside(db: Db, meili: Meilisearch): { stop: () => Promise<string> } {
  const started = Date.now();
  const cpuBefore = cpuTicks();
  const vacuums = new Map<string, number>();
  let samples = 0;
  let sampling = false;
  const timer = setInterval(() => {
    if (sampling) return;
    sampling = true;
    sql<{ query: string }>`select query from pg_stat_activity where backend_type = 'autovacuum worker'`
      .execute(db)
      .then(({ rows }) => {
        samples++;
        for (const r of rows) vacuums.set(r.query, (vacuums.get(r.query) ?? 0) + 1);
      })
      // A sample missed (Postgres busy) counts as none; the share is of the samples taken.
      .catch(() => {})
      .finally(() => {
        sampling = false;
      });
  }, 250);
  return {
    stop: async () => {
      clearInterval(timer);
      const ended = Date.now();
      const cpu = cpuTicks();
      const busy = (cpu.busy - cpuBefore.busy) / Math.max(1, cpu.all - cpuBefore.all);
      let batchMs = 0;
      const kinds = new Set<string>();
      const page = await meili.batches.getBatches({ limit: 200 });
      for (const b of page.results) {
        const from = Date.parse(b.startedAt);
        const to = b.finishedAt ? Date.parse(b.finishedAt) : ended;
        if (to <= started || from >= ended) continue;
        batchMs += Math.min(to, ended) - Math.max(from, started);
        for (const type of Object.keys(b.stats.types ?? {})) kinds.add(type);
      }
      const seen = [...vacuums].map(
        ([q, n]) => `${q} (${((100 * n) / Math.max(1, samples)).toFixed(0)} % of samples)`,
      );
      return `cores ${(100 * busy).toFixed(0)} % busy; Meilisearch batches ${(batchMs / 1000).toFixed(1)} s of the pass's ${((ended - started) / 1000).toFixed(1)} s${kinds.size > 0 ? ` (${[...kinds].join(', ')})` : ''}; autovacuum: ${seen.length > 0 ? seen.join('; ') : 'none seen'}`;
    },
  };
}

/** An ISO 8601 duration as Meilisearch writes it (PT1.234S, PT2M3.4S, PT1H2M3S) in ms. */
function durationMs(iso: string | null | undefined): number {
  const m = /^P(?:(\d+)D)?T?(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?$/.exec(iso ?? '');
  if (!m) return 0;
  return (
    (((Number(m[1] ?? 0) * 24 + Number(m[2] ?? 0)) * 60 + Number(m[3] ?? 0)) * 60 + Number(m[4] ?? 0)) * 1000
  );
}

await main();
