/**
 * Location feed benchmark: 100,000 generated sheet rows across 5,000 Orgs, imported into a fresh
 * database through the same runImport the worker uses (no queue): a first import, then the same
 * file again (every row unchanged). Prints rows/s for each, the peak RSS during each, and the CPU
 * time of node and of the local Postgres server (which of the two bounds the import).
 *
 *   npm run bench:locations                       # 100,000 rows, 5,000 Orgs
 *   BENCH_ROWS=20000 BENCH_ORGS=1000 npm run bench:locations
 *   BENCH_IN_FLIGHT=1 npm run bench:locations     # batches one after the other (default: two in flight)
 *   BENCH_PROFILE=/tmp/prof npm run bench:locations   # + a CPU profile of each import's main thread only
 *   BENCH_ALLOC=/tmp/alloc npm run bench:locations    # + where each import allocates (sampled, collected objects included)
 *
 * Postgres: BENCH_PG_ADMIN_URL (default: the local Postgres, bench/local-services.ts); the benchmark
 * creates its own database `bizdir_bench_loc_*` and drops it at the end.
 */
import { existsSync, promises as fs, readdirSync, readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createImportRun } from '../ingest/import-runs/import-runs.state.js';
import { runImport } from '../ingest/run/run-import.js';
import { loadConfig } from '../shared/config.js';
import { createDb, migrateToLatest } from '../shared/db.js';
import { LOCAL_PG_ADMIN_URL } from './local-services.js';
import { HEADER, row } from './location-sheet.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const ORGS = Number(process.env.BENCH_ORGS ?? 5_000);
const BATCH = process.env.BENCH_BATCH ? Number(process.env.BENCH_BATCH) : undefined;
/** BENCH_IN_FLIGHT=N: N batches in flight (RunImportDeps.batchesInFlight; default: the feed's own, 2 with IMPORT_PIPELINE=on, else 1). */
const IN_FLIGHT = process.env.BENCH_IN_FLIGHT ? Number(process.env.BENCH_IN_FLIGHT) : undefined;
const ADMIN_URL = process.env.BENCH_PG_ADMIN_URL ?? LOCAL_PG_ADMIN_URL;
/** BENCH_PROFILE=DIR: a .cpuprofile per import, of the import alone (not the sheet's writing, not startup). */
const PROFILE_DIR = process.env.BENCH_PROFILE;

/** BENCH_ALLOC=DIR: a .heapprofile per import of every allocation sampled, kept or collected. */
const ALLOC_DIR = process.env.BENCH_ALLOC;

/**
 * Runs `work` under V8's sampling heap profiler, counting objects the collector has freed too: the
 * profile says where the import allocates (what the garbage collector then works for), not what it keeps.
 */
async function allocationProfiled<T>(name: string, work: () => Promise<T>): Promise<T> {
  if (!ALLOC_DIR) return work();
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 32_768,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  try {
    return await work();
  } finally {
    const { profile } = await session.post('HeapProfiler.stopSampling');
    await fs.mkdir(ALLOC_DIR, { recursive: true });
    const out = path.join(ALLOC_DIR, `${name}.heapprofile`);
    await fs.writeFile(out, JSON.stringify(profile));
    session.disconnect();
    console.log(`allocation profile: ${out}`);
  }
}

/** Runs `work` under the V8 profiler when BENCH_PROFILE is set, writing DIR/<name>.cpuprofile. */
async function profiled<T>(name: string, work: () => Promise<T>): Promise<T> {
  if (!PROFILE_DIR) return allocationProfiled(name, work);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await allocationProfiled(name, work);
  } finally {
    const { profile } = await session.post('Profiler.stop');
    await fs.mkdir(PROFILE_DIR, { recursive: true });
    const out = path.join(PROFILE_DIR, `${name}.cpuprofile`);
    await fs.writeFile(out, JSON.stringify(profile));
    session.disconnect();
    console.log(`profile: ${out}`);
  }
}

async function writeSheet(file: string): Promise<void> {
  const handle = await fs.open(file, 'w');
  let chunk: string[] = [HEADER];
  for (let i = 0; i < ROWS; i++) {
    chunk.push(row(i, ORGS));
    if (chunk.length >= 5000) {
      await handle.write(`${chunk.join('\r\n')}\r\n`);
      chunk = [];
    }
  }
  if (chunk.length > 0) await handle.write(`${chunk.join('\r\n')}\r\n`);
  await handle.close();
}

/**
 * CPU seconds used so far by the local Postgres server's processes (Linux /proc; null elsewhere or
 * when the server runs on another machine or as a container). Says which side bounds an import.
 */
function postgresCpuSeconds(): number | null {
  if (!existsSync('/proc/self/stat')) return null;
  let ticks = 0;
  let found = false;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
      found = true;
    } catch {
      // the process ended while we looked
    }
  }
  return found ? ticks / 100 : null;
}

/**
 * Runs `work` and returns its wall time, node's CPU time, and the peak resident set size while it
 * runs, sampled every 20 ms (process-wide maxRSS only grows).
 */
async function measured<T>(
  work: () => Promise<T>,
): Promise<{ result: T; seconds: number; peakMb: number; cpuSeconds: number }> {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  try {
    const result = await work();
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    const used = process.cpuUsage(cpu);
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, seconds, peakMb: peak / 2 ** 20, cpuSeconds: (used.user + used.system) / 1e6 };
  } finally {
    clearInterval(timer);
  }
}

async function main(): Promise<void> {
  const dbName = `bizdir_bench_loc_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${dbName}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${dbName}`;
  const handle = createDb(url.toString(), { max: 4, applicationName: 'bizdir-bench' });
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bizdir-bench-loc-'));
  const file = path.join(dir, 'locations.csv');
  try {
    await migrateToLatest(handle.db);
    await writeSheet(file);
    const size = (await fs.stat(file)).size;
    console.log(`sheet: ${ROWS} rows, ${ORGS} Orgs, ${(size / 2 ** 20).toFixed(1)} MiB (${file})`);
    const deps = {
      db: handle.db,
      config: loadConfig(),
      ...(BATCH ? { batchSize: BATCH } : {}),
      ...(IN_FLIGHT ? { batchesInFlight: IN_FLIGHT } : {}),
    };
    const phases: [string, number][] = [];
    for (const label of ['first import', 'unchanged re-import']) {
      const run = await createImportRun(handle.db, {
        feed: 'locations',
        parts: [{ source: file, entry: null }],
        options: { full: false },
      });
      const pgBefore = postgresCpuSeconds();
      const { result, seconds, peakMb, cpuSeconds } = await measured(() =>
        profiled(label.replaceAll(' ', '-'), () => runImport(deps, run.id)),
      );
      const pgAfter = postgresCpuSeconds();
      const pgCpu = pgBefore === null || pgAfter === null ? 'n/a' : `${(pgAfter - pgBefore).toFixed(1)} s`;
      const rate = ROWS / seconds;
      phases.push([label, rate]);
      console.log(
        `${label.padEnd(20)} ${seconds.toFixed(2)} s  ${Math.round(rate).toLocaleString('en')} rows/s  ` +
          `peak RSS ${peakMb.toFixed(0)} MiB  node CPU ${cpuSeconds.toFixed(1)} s  Postgres CPU ${pgCpu}  (inserted ${result.inserted}, updated ${result.updated}, ` +
          `unchanged ${result.unchanged}, rejected ${result.rejected})`,
      );
    }
    const orgs = await handle.db
      .selectFrom('orgs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirst();
    console.log(
      `Orgs created: ${orgs?.n}; targets: first import >= 20,000 rows/s, re-import >= 40,000 rows/s`,
    );
    // Wall-clock rates depend on what else the machine runs (Postgres shares it); say how busy it was.
    console.log(
      `load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} on ${os.cpus().length} CPUs`,
    );
  } finally {
    await handle.close();
    await admin.query(`drop database if exists ${dbName} with (force)`);
    await admin.end();
    if (process.env.BENCH_KEEP_SHEET) console.log(`kept ${file}`);
    else await fs.rm(dir, { recursive: true, force: true });
  }
}

await main();
