import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createReadStream, createWriteStream, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import Papa from 'papaparse';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { getRun, type ImportRun } from '../ingest/import-runs/import-runs.repository.js';
import { createImportRun, partsOf } from '../ingest/import-runs/import-runs.state.js';
import { REGISTRAR_HEADER_LINE } from '../ingest/registrar/registrar.parser.js';
import { enqueueImportParts, enqueueImportRun, openProducerQueue } from '../jobs/queue.js';
import { createDb, type Db, migrateToLatest } from '../shared/db.js';
import { copyLine } from '../shared/pg-copy.js';
import { BIZDIR_ARGS, BIZDIR_HOW, buildBizdir, FROM_SOURCE } from './bizdir-cli.js';
import { partsReadMs } from './import-phases.js';
import { LOCAL_PG_ADMIN_URL, LOCAL_REDIS_URL, runStatement } from './local-services.js';
import { namesOf, rowOf, writeRegistrarFile } from './registrar-generate.js';

/**
 * Registrar import benchmark: `npm run bench:import -- [N]` (default 1,000,000 rows).
 *
 *   (a) baseline: the file through papaparse into COPY on an unlogged table (55 text columns)
 *   (a2) Postgres's own COPY: psql `\copy` of the same file into such a table
 *   (b) first import, (c) the same file again, (d) the file with 10% of rows changed
 *   (e) the same N rows as 7 parts, first import, 1 worker; (f) the same with 2 workers
 *
 * Each import runs in real `bizdir worker` processes fed through the real queue; their peak RSS is
 * read from /proc. Every figure is printed as rows/s and as ratios to (a) and (a2). Uses its own
 * databases (created and dropped) and queue prefixes. Env: BENCH_PG_ADMIN_URL (default:
 * the local Postgres, bench/local-services.ts), REDIS_URL, BENCH_SKIP_PARTS=1 to leave out (e)/(f),
 * BENCH_WORKER=tsx to run the workers from source instead of the built dist/ (see startWorker).
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.argv[2] ?? 1_000_000);
if (!Number.isInteger(N) || N < 7) throw new Error('usage: npm run bench:import -- [rows]');
const ADMIN = process.env.BENCH_PG_ADMIN_URL ?? LOCAL_PG_ADMIN_URL;
const REDIS = process.env.REDIS_URL ?? LOCAL_REDIS_URL;
const PARTS = 7;
const tag = `${process.pid}_${Date.now().toString(36)}`;
const urlOf = (name: string) => {
  const u = new URL(ADMIN);
  u.pathname = `/${name}`;
  return u.toString();
};
const outDir = path.join(ROOT, 'bench/out');

const seconds = (ms: number) => (ms / 1000).toFixed(1);
const rate = (rows: number, ms: number) => Math.round(rows / (ms / 1000));

const admin = (text: string) => runStatement(ADMIN, text);

const RAW_TABLE = `create unlogged table bench_raw (${Array.from({ length: 55 }, (_, i) => `c${i + 1} text`).join(', ')})`;

/** (a): papaparse's stream into COPY text format (backslash, tab and line breaks escaped). */
async function baseline(dbUrl: string, file: string): Promise<number> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    await client.query('drop table if exists bench_raw');
    await client.query(RAW_TABLE);
    const started = Date.now();
    let header = true;
    const toCopy = new Transform({
      writableObjectMode: true,
      transform(row: string[], _enc, done) {
        if (header) {
          header = false;
          done();
          return;
        }
        done(null, copyLine(row));
      },
    });
    await pipeline(
      createReadStream(file),
      Papa.parse(Papa.NODE_STREAM_INPUT, { delimiter: ',', newline: '\n', skipEmptyLines: true }),
      toCopy,
      client.query(copyFrom('copy bench_raw from stdin')),
    );
    return Date.now() - started;
  } finally {
    await client.end();
  }
}

/** (a2): psql's `\copy` (CSV, header) of the same file: what Postgres itself takes to load it. */
async function psqlCopy(dbUrl: string, file: string): Promise<number> {
  await (async () => {
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    await c.query('drop table if exists bench_raw');
    await c.query(RAW_TABLE);
    await c.end();
  })();
  const started = Date.now();
  execFileSync(
    'psql',
    [dbUrl, '-v', 'ON_ERROR_STOP=1', '-c', `\\copy bench_raw from '${file}' with (format csv, header)`],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  return Date.now() - started;
}

/** Builds dist/ so the workers run the code of this checkout, as users run them (bizdir-cli.ts). */
function buildWorker() {
  const ms = buildBizdir();
  if (!FROM_SOURCE) console.log(`built dist/ for the workers in ${seconds(ms)} s`);
}

function startWorker(dbUrl: string, prefix: string, concurrency = 1): ChildProcess {
  return spawn(
    process.execPath,
    [...BIZDIR_ARGS, 'worker', '--queues', 'import', '--concurrency', String(concurrency)],
    {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: dbUrl, REDIS_URL: REDIS, QUEUE_PREFIX: prefix, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
}

/** Peak resident set size of a process so far (Linux), in MB. */
function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** Splits the generated rows into `n` part files, as the register ships them. */
async function writeParts(base: string, n: number, rows: number): Promise<string[]> {
  const files: string[] = [];
  const per = Math.ceil(rows / n);
  const nextName = namesOf(rows);
  for (let p = 0; p < n; p++) {
    const file = `${base}-part${p + 1}_${n}.csv`;
    const out = createWriteStream(file);
    out.write(`${REGISTRAR_HEADER_LINE}\n`);
    let chunk: string[] = [];
    for (let i = p * per + 1; i <= Math.min(rows, (p + 1) * per); i++) {
      chunk.push(rowOf(i, false, nextName()));
      if (chunk.length === 1000) {
        if (!out.write(`${chunk.join('\n')}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
        chunk = [];
      }
    }
    if (chunk.length > 0) out.write(`${chunk.join('\n')}\n`);
    await new Promise<void>((r) => out.end(() => r()));
    files.push(file);
  }
  return files;
}

interface Env {
  dbName: string;
  dbUrl: string;
  prefix: string;
  db: Db;
  close(): Promise<void>;
  producer: Awaited<ReturnType<typeof openProducerQueue<'import'>>>;
  workers: ChildProcess[];
}

async function environment(label: string, workers: number, concurrency = 1): Promise<Env> {
  const dbName = `bizdir_bench_${tag}_${label}`;
  const dbUrl = urlOf(dbName);
  const prefix = `bizdir-bench-${tag}-${label}`;
  await admin(`create database ${dbName}`);
  const { db, close } = createDb(dbUrl, { max: 2 });
  await migrateToLatest(db);
  const producer = await openProducerQueue({ queuePrefix: prefix }, REDIS, 'import');
  const procs = Array.from({ length: workers }, () => startWorker(dbUrl, prefix, concurrency));
  return { dbName, dbUrl, prefix, db, close, producer, workers: procs };
}

async function teardown(env: Env) {
  for (const w of env.workers) {
    w.kill('SIGTERM');
    await new Promise((res) => w.once('exit', res));
  }
  const index = await openProducerQueue({ queuePrefix: env.prefix }, REDIS, 'index');
  for (const q of [env.producer, index]) {
    // Its keys go with the prefix anyway; a queue that cannot be emptied must not hide the figures.
    await q.queue
      .obliterate({ force: true })
      .catch((err) => console.error(`could not empty ${q.queue.name}: ${(err as Error).message}`));
    await q.close();
  }
  await env.close();
  await admin(`drop database if exists ${env.dbName} with (force)`);
}

/** The machine's CPU time so far (Linux /proc/stat, all cores): busy and total ticks. */
function machineTicks(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  // idle and iowait are the time the cores had nothing to run.
  return { busy: total - cpu[3]! - cpu[4]!, total };
}

/** How busy the machine's cores were between two readings: "1.87 of 2 cores". */
function coresBusy(from: { busy: number; total: number }, to: { busy: number; total: number }): string {
  const cores = availableParallelism();
  const share = (to.busy - from.busy) / Math.max(1, to.total - from.total);
  return `${(share * cores).toFixed(2)} of ${cores} cores busy`;
}

async function importRun(
  env: Env,
  sources: string[],
): Promise<{ ms: number; run: ImportRun; cores: string; phases: string }> {
  const before = machineTicks();
  const { ms, run } = await importRunTimed(env, sources);
  const cores = coresBusy(before, machineTicks());
  const read = await partsReadMs(env.db, run.id);
  return {
    ms,
    run,
    cores,
    phases: `read + stage ${seconds(read)} s, merge + settle ${seconds(ms - read)} s`,
  };
}

async function importRunTimed(env: Env, sources: string[]): Promise<{ ms: number; run: ImportRun }> {
  const run = await createImportRun(env.db, {
    feed: 'registrar',
    parts: sources.map((source) => ({ source, entry: null })),
    options: { country: 'GB', full: false },
  });
  const t = Date.now();
  if (sources.length === 1) await enqueueImportRun(env.producer.queue, run.id);
  else await enqueueImportParts(env.producer.flows, run.id, await partsOf(env.db, run));
  for (;;) {
    const r = (await getRun(env.db, run.id))!;
    if (r.status === 'failed') throw new Error(`run ${run.id} failed: ${r.error}`);
    if (r.status === 'succeeded') return { ms: Date.now() - t, run: r };
    await new Promise((res) => setTimeout(res, 100));
  }
}

async function main() {
  mkdirSync(outDir, { recursive: true });
  buildWorker();
  console.log(`workers run ${BIZDIR_HOW}`);
  const file = path.join(outDir, `registrar-${N}.csv`);
  const changed = path.join(outDir, `registrar-${N}-changed.csv`);
  const t = Date.now();
  await writeRegistrarFile(file, N);
  await writeRegistrarFile(changed, N, 10);
  const parts = process.env.BENCH_SKIP_PARTS
    ? []
    : await writeParts(path.join(outDir, `registrar-${N}`), PARTS, N);
  console.log(
    `generated ${N} rows (${Math.round(statSync(file).size / 2 ** 20)} MB) twice and as ${PARTS} parts in ${seconds(Date.now() - t)} s`,
  );
  const one = await environment('one', 1);
  let aRate = 0;
  let pRate = 0;
  const ratios = (rows: number) => `${(rows / aRate).toFixed(2)} x (a), ${(rows / pRate).toFixed(3)} x (a2)`;
  const peaks: number[] = [];
  try {
    const a = await baseline(one.dbUrl, file);
    aRate = rate(N, a);
    console.log(`(a) baseline papaparse -> COPY: ${seconds(a)} s, ${aRate} rows/s`);
    const p = await psqlCopy(one.dbUrl, file);
    pRate = rate(N, p);
    console.log(`(a2) psql \\copy: ${seconds(p)} s, ${pRate} rows/s = ${(pRate / aRate).toFixed(2)} x (a)`);
    const worker = one.workers[0]!;
    console.log(`worker peak RSS at start: ${peakRssMb(worker.pid!)} MB`);
    for (const [label, source] of [
      ['(b) first import', file],
      ['(c) same file again', file],
      ['(d) 10% of rows changed', changed],
    ] as const) {
      const { ms, run: r, cores, phases } = await importRun(one, [source]);
      const rows = rate(r.rows_read, ms);
      console.log(
        `${label}: ${seconds(ms)} s (${phases}), ${rows} rows/s = ${ratios(rows)} | ` +
          `${r.inserted} inserted, ${r.updated} updated, ${r.unchanged} unchanged, ${r.rejected} rejected | ` +
          `worker peak RSS so far ${peakRssMb(worker.pid!)} MB | ${cores}`,
      );
    }
    peaks.push(peakRssMb(worker.pid!));
  } finally {
    await teardown(one);
  }
  if (parts.length > 0) {
    let oneWorker = 0;
    for (const [label, workers] of [
      [`(e) ${PARTS} parts, 1 worker`, 1],
      [`(f) ${PARTS} parts, 2 workers`, 2],
    ] as const) {
      const env = await environment(workers === 1 ? 'e' : 'f', workers);
      try {
        const { ms, run: r, cores, phases } = await importRun(env, parts);
        const rows = rate(r.rows_read, ms);
        if (workers === 1) oneWorker = rows;
        const vsOne = workers === 1 ? '' : `, ${(rows / oneWorker).toFixed(2)} x (e)`;
        const rss = env.workers.map((w) => peakRssMb(w.pid!));
        peaks.push(...rss);
        console.log(
          `${label}: ${seconds(ms)} s (${phases}), ${rows} rows/s = ${ratios(rows)}${vsOne} | ${r.inserted} inserted | worker peak RSS ${rss.join(', ')} MB | ${cores}`,
        );
      } finally {
        await teardown(env);
      }
    }
  }
  console.log(`worker peak RSS: ${Math.max(...peaks)} MB (N = ${N})`);
  for (const f of [file, changed, ...parts]) rmSync(f, { force: true });
}

await main();
