import { type ChildProcess, spawn } from 'node:child_process';
import { createReadStream, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import Papa from 'papaparse';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createRun, getRun, type ImportRun } from '../ingest/import-runs.repository.js';
import { enqueueImportRun, openProducerQueue } from '../jobs/queue.js';
import { createDb, migrateToLatest } from '../shared/db.js';
import { copyLine } from '../shared/pg-copy.js';
import { writeRegistrarFile } from './registrar-generate.js';

/**
 * Registrar import benchmark: `npm run bench:import -- [N]` (default 1,000,000 rows).
 *
 *   (a) raw baseline: the file through papaparse into COPY on an unlogged table
 *   (b) first import, (c) the same file again, (d) the file with 10% of rows changed
 *
 * The imports run in a real `bizdir worker` process fed through the real queue; its peak RSS is read
 * from /proc. Uses its own database (created and dropped) and queue prefix. Env: BENCH_PG_ADMIN_URL
 * (default postgres://postgres@127.0.0.1:5432/postgres), REDIS_URL.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.argv[2] ?? 1_000_000);
if (!Number.isInteger(N) || N < 1) throw new Error('usage: npm run bench:import -- [rows]');
const ADMIN = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const tag = `${process.pid}_${Date.now().toString(36)}`;
const dbName = `bizdir_bench_${tag}`;
const dbUrl = (() => {
  const u = new URL(ADMIN);
  u.pathname = `/${dbName}`;
  return u.toString();
})();
const prefix = `bizdir-bench-${tag}`;
const outDir = path.join(ROOT, 'bench/out');

const seconds = (ms: number) => (ms / 1000).toFixed(1);
const rate = (rows: number, ms: number) => Math.round(rows / (ms / 1000));

async function admin(sqlText: string) {
  const c = new pg.Client({ connectionString: ADMIN });
  await c.connect();
  try {
    await c.query(sqlText);
  } finally {
    await c.end();
  }
}

/** COPY text format: backslash, tab and line breaks escaped. */
async function baseline(file: string): Promise<number> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    const cols = Array.from({ length: 55 }, (_, i) => `c${i + 1} text`).join(', ');
    await client.query(`create unlogged table bench_raw (${cols})`);
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

function startWorker(): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'bin/bizdir.ts', 'worker', '--queues', 'import'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: dbUrl, REDIS_URL: REDIS, QUEUE_PREFIX: prefix, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

/** Peak resident set size of a process so far (Linux), in MB. */
function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

async function main() {
  mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, `registrar-${N}.csv`);
  const changed = path.join(outDir, `registrar-${N}-changed.csv`);
  let t = Date.now();
  await writeRegistrarFile(file, N);
  await writeRegistrarFile(changed, N, 10);
  console.log(
    `generated ${N} rows (${Math.round(statSync(file).size / 2 ** 20)} MB) twice in ${seconds(Date.now() - t)} s`,
  );

  await admin(`create database ${dbName}`);
  const { db, close } = createDb(dbUrl, { max: 2 });
  const producer = openProducerQueue({ queuePrefix: prefix }, REDIS, 'import');
  const worker = startWorker();
  try {
    await migrateToLatest(db);
    const a = await baseline(file);
    console.log(`(a) baseline papaparse -> COPY: ${seconds(a)} s, ${rate(N, a)} rows/s`);
    const aRate = rate(N, a);

    const phase = async (label: string, source: string): Promise<ImportRun> => {
      const run = await createRun(db, { feed: 'registrar', source, options: { country: 'GB', full: false } });
      t = Date.now();
      await enqueueImportRun(producer.queue, run.id);
      for (;;) {
        const r = (await getRun(db, run.id))!;
        if (r.status === 'succeeded' || r.status === 'failed') {
          if (r.status === 'failed') throw new Error(`${label} failed: ${r.error}`);
          const ms = Date.now() - t;
          const rows = rate(r.rows_read, ms);
          console.log(
            `${label}: ${seconds(ms)} s, ${rows} rows/s = ${(rows / aRate).toFixed(2)} x (a) | ` +
              `${r.inserted} inserted, ${r.updated} updated, ${r.unchanged} unchanged, ${r.rejected} rejected | ` +
              `worker peak RSS so far ${peakRssMb(worker.pid!)} MB`,
          );
          return r;
        }
        await new Promise((res) => setTimeout(res, 200));
      }
    };
    console.log(`worker peak RSS at start: ${peakRssMb(worker.pid!)} MB`);
    await phase('(b) first import', file);
    await phase('(c) same file again', file);
    await phase('(d) 10% of rows changed', changed);
    console.log(`worker peak RSS: ${peakRssMb(worker.pid!)} MB (N = ${N})`);
  } finally {
    worker.kill('SIGTERM');
    await new Promise((res) => worker.once('exit', res));
    // Both queues the worker used: the import jobs, and the index jobs its imports asked for.
    const index = openProducerQueue({ queuePrefix: prefix }, REDIS, 'index');
    for (const q of [producer, index]) {
      await q.queue.obliterate({ force: true }).catch(() => {});
      await q.close();
    }
    await close();
    await admin(`drop database if exists ${dbName} with (force)`);
    rmSync(file, { force: true });
    rmSync(changed, { force: true });
  }
}

await main();
