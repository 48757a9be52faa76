import { rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { createImportRun } from '../ingest/import-run.js';
import { runImport } from '../ingest/run-import.js';
import { loadConfig } from '../shared/config.js';
import { createDb, migrateToLatest } from '../shared/db.js';
import { LOCAL_PG_ADMIN_URL, runStatement } from './local-services.js';
import { writeRegistrarFile } from './registrar-generate.js';

/**
 * In-process profile of the register import (no queue, no worker process), for `node --cpu-prof`
 * and pg_stat_statements: `node --import tsx bench/import-profile.ts [rows]`. Runs a first import,
 * the same file again and the file with 10% changed, each timed, into a database of its own
 * (created and dropped). Env: PROFILE_PG_ADMIN_URL (default: the local Postgres, bench/local-services.ts),
 * PROFILE_STEPS (e.g. `first` to run only the first import), PROFILE_LANES (merge chunks written side
 * by side, default 2), PROFILE_KEEP=1 to keep the database.
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
console.log(`${N} rows, ${Math.round(statSync(file).size / 2 ** 20)} MB`);
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
    const done = await runImport({ db, config, mergeLanes: LANES }, run.id);
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
  }
} finally {
  await close();
  if (!process.env.PROFILE_KEEP) await admin(`drop database if exists ${dbName} with (force)`);
  rmSync(file, { force: true });
  rmSync(changed, { force: true });
}
