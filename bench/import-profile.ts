import { execFileSync } from 'node:child_process';
import { rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { createImportRun } from '../ingest/import-runs/import-runs.state.js';
import { runImport } from '../ingest/run/run-import.js';
import { loadConfig } from '../shared/config.js';
import { createDb, migrateToLatest } from '../shared/db.js';
import { LOCAL_PG_ADMIN_URL, runStatement } from './local-services.js';
import { writeRegistrarFile } from './registrar-generate.js';

/**
 * In-process profile of the register import (no queue, no worker process), for `node --cpu-prof`
 * and pg_stat_statements: `node --import tsx bench/import-profile.ts [rows]`. Runs a first import,
 * the same file again and the file with 10% changed, each timed, into a database of its own
 * (created and dropped). Env: PROFILE_PG_ADMIN_URL (default: the local Postgres, bench/local-services.ts),
 * PROFILE_STEPS (e.g. `first` to run only the first import), PROFILE_ORDER=name (rows in name order,
 * as the register publishes them, instead of the generator's number order), PROFILE_LANES (merge chunks written side
 * by side, default 2), PROFILE_KEEP=1 to keep the database.
 *
 * Besides each step's times it prints the merge's pace (seconds per 100,000 merged companies, so what
 * grows with the register shows as a rising column) and what the step cost the server in WAL and
 * buffer writes (pg_stat_wal, pg_stat_bgwriter: server-wide, so meaningful on a private server only).
 */
const N = Number(process.argv[2] ?? 200_000);
const ADMIN = process.env.PROFILE_PG_ADMIN_URL ?? LOCAL_PG_ADMIN_URL;
const steps = (process.env.PROFILE_STEPS ?? 'first,again,changed').split(',');
const LANES = Number(process.env.PROFILE_LANES ?? 2);
const dbName = `bizdir_profile_${process.pid}`;
const config = loadConfig();
const url = new URL(ADMIN);
url.pathname = `/${dbName}`;

const admin = (text: string) => runStatement(ADMIN, text);

const dir = process.env.PROFILE_DIR ?? '/tmp';
const file = path.join(dir, `registrar-profile-${N}.csv`);
const changed = path.join(dir, `registrar-profile-${N}-changed.csv`);
await writeRegistrarFile(file, N);
await writeRegistrarFile(changed, N, 10);
// PROFILE_ORDER=name: the rows in name order, as the register publishes them (the generator writes
// them in company-number order, so the staged rows of a merge chunk sit side by side on disk).
if (process.env.PROFILE_ORDER === 'name') {
  for (const f of [file, changed])
    execFileSync('sh', [
      '-c',
      `{ head -n 1 "$0"; tail -n +2 "$0" | LC_ALL=C sort -S 1G; } > "$0.sorted" && mv "$0.sorted" "$0"`,
      f,
    ]);
} else if (process.env.PROFILE_ORDER !== undefined && process.env.PROFILE_ORDER !== 'number')
  throw new Error('PROFILE_ORDER is name or number');
console.log(`${N} rows, ${Math.round(statSync(file).size / 2 ** 20)} MB`);
/** Server-wide WAL and buffer-write counters (MB where bytes). */
async function serverCounters(): Promise<Record<string, number>> {
  const { rows } = await sql<Record<string, string>>`
    select w.wal_records, w.wal_fpi, w.wal_bytes / 1048576.0 as wal_mb, w.wal_buffers_full,
      b.checkpoints_timed + b.checkpoints_req as checkpoints, b.buffers_checkpoint, b.buffers_clean,
      b.buffers_backend, b.buffers_alloc
    from pg_stat_wal w, pg_stat_bgwriter b`.execute(db);
  return Object.fromEntries(Object.entries(rows[0] ?? {}).map(([k, v]) => [k, Number(v)]));
}

/** Seconds between every 100,000 companies merged (the merge's progress reports). */
function mergePace() {
  const marks: string[] = [];
  let last = performance.now();
  let next = 100_000;
  return {
    onProgress: (p: { merged?: number; inserted: number; updated: number; unchanged: number }) => {
      const merged = p.inserted + p.updated + p.unchanged;
      if (merged === 0) last = performance.now();
      while (merged >= next) {
        const now = performance.now();
        marks.push(((now - last) / 1000).toFixed(1));
        last = now;
        next += 100_000;
      }
    },
    marks: () => marks,
  };
}

await admin(`create database ${dbName}`);
const { db, close } = createDb(url.toString(), { max: LANES + 3 });
try {
  await migrateToLatest(db);
  for (const [step, source] of [
    ['first', file],
    ['again', file],
    ['changed', changed],
  ] as const) {
    if (!steps.includes(step)) continue;
    const run = await createImportRun(db, {
      feed: 'registrar',
      parts: [{ source, entry: null }],
      options: { country: 'GB', full: false },
    });
    const t = performance.now();
    const cpu = process.cpuUsage();
    const before = await serverCounters();
    const pace = mergePace();
    const done = await runImport({ db, config, mergeLanes: LANES, onProgress: pace.onProgress }, run.id);
    const ms = performance.now() - t;
    const used = process.cpuUsage(cpu);
    // The parts' read + stage phase ends at the last part's finish; the merge and settle follow.
    const { rows } = await sql<{ read: number }>`
      select extract(epoch from max(p.finished_at) - min(p.started_at)) * 1000 as read
      from import_run_parts p where p.run_id = ${run.id}`.execute(db);
    const read = Number(rows[0]?.read ?? 0);
    console.log(
      `${step}: ${(ms / 1000).toFixed(1)} s (read + stage ${(read / 1000).toFixed(1)} s, merge + settle ${((ms - read) / 1000).toFixed(1)} s), ${Math.round(N / (ms / 1000))} rows/s, node cpu ${((used.user + used.system) / 1e6).toFixed(1)} s | ` +
        `${done.inserted} inserted, ${done.updated} updated, ${done.unchanged} unchanged | ${done.status}`,
    );
    console.log(`  merge pace, s per 100K merged: ${pace.marks().join(' ')}`);
    const after = await serverCounters();
    console.log(
      `  server: ${Object.entries(after)
        .map(([k, v]) => `${k} ${Math.round(v - (before[k] ?? 0))}`)
        .join(', ')}`,
    );
  }
} finally {
  await close();
  if (!process.env.PROFILE_KEEP) await admin(`drop database if exists ${dbName} with (force)`);
  rmSync(file, { force: true });
  rmSync(changed, { force: true });
}
