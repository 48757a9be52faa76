import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { getRun, type ImportRun } from '../../ingest/import-runs/import-runs.repository.js';
import { createImportRun } from '../../ingest/import-runs/import-runs.state.js';
import { enqueueImportRun, openProducerQueue } from '../../jobs/queue.js';
import { createDb, type Db, migrateToLatest } from '../../shared/db.js';
import { BIZDIR_ARGS } from '../bizdir-cli.js';
import { runStatement } from '../local-services.js';

/**
 * Part (b) of bench:events: what writing events costs an import. The same register imports into two
 * databases, one with the event triggers switched off (`alter table ... disable trigger`, in the
 * bench's own database only: there is no product setting for it), one as shipped; in each, the
 * first import (set-up), the same file again (unchanged), and the month-later file with `--full`.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Every `events_*` trigger of migration 0025 on the tables an import writes. */
const EVENT_TRIGGERS: readonly [string, string][] = [
  ['orgs', 'events_insert'],
  ['orgs', 'events_update'],
  ['locations', 'events_insert'],
  ['locations', 'events_update'],
  ['addresses', 'events_update'],
  ['import_runs', 'events_import_runs'],
];

export async function setEventTriggers(db: Db, on: boolean): Promise<void> {
  for (const [table, trigger] of EVENT_TRIGGERS) {
    await sql`alter table ${sql.table(table)} ${sql.raw(on ? 'enable' : 'disable')} trigger ${sql.id(trigger)}`.execute(
      db,
    );
  }
}

export interface ImportTimes {
  firstS: number;
  unchangedS: number;
  monthS: number;
  /** Events the month-later run wrote (0 with the triggers off). */
  monthEvents: number;
  unchangedEvents: number;
}

interface Side {
  name: string;
  url: string;
  prefix: string;
  db: Db;
  close(): Promise<void>;
  producer: Awaited<ReturnType<typeof openProducerQueue<'import'>>>;
  worker: ChildProcess;
}

/** A database of its own (migrated, triggers as asked) and one `bizdir worker` for its imports. */
async function side(admin: string, redis: string, tag: string, on: boolean): Promise<Side> {
  const name = `bizdir_bench_events_${tag}_${on ? 'on' : 'off'}`;
  const url = new URL(admin);
  url.pathname = `/${name}`;
  await runStatement(admin, `create database ${name}`);
  const { db, close } = createDb(url.toString(), { max: 2 });
  await migrateToLatest(db);
  if (!on) await setEventTriggers(db, false);
  const prefix = `bizdir-bench-events-${tag}-${on ? 'on' : 'off'}`;
  const producer = await openProducerQueue({ queuePrefix: prefix }, redis, 'import');
  const worker = spawn(process.execPath, [...BIZDIR_ARGS, 'worker', '--queues', 'import'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: url.toString(),
      REDIS_URL: redis,
      QUEUE_PREFIX: prefix,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return { name, url: url.toString(), prefix, db, close, producer, worker };
}

async function teardown(admin: string, redis: string, s: Side): Promise<void> {
  s.worker.kill('SIGTERM');
  await new Promise((res) => s.worker.once('exit', res));
  const index = await openProducerQueue({ queuePrefix: s.prefix }, redis, 'index');
  for (const q of [s.producer, index]) {
    // The bench's own queues: gone with it (a failure here leaves only keys under its prefix).
    await q.queue
      .obliterate({ force: true })
      .catch((err: unknown) => console.warn(`obliterate: ${String(err)}`));
    await q.close();
  }
  await s.close();
  await runStatement(admin, `drop database if exists ${s.name} with (force)`);
}

/** One import through the worker; its time is the run's own (started_at to finished_at). */
async function importOnce(s: Side, files: readonly string[], full: boolean): Promise<ImportRun> {
  const run = await createImportRun(s.db, {
    feed: 'registrar',
    parts: files.map((source) => ({ source, entry: null })),
    options: { country: 'GB', full },
  });
  await enqueueImportRun(s.producer.queue, run.id);
  for (;;) {
    const r = (await getRun(s.db, run.id))!;
    if (r.status === 'failed') throw new Error(`run ${run.id} failed: ${r.error}`);
    if (r.status === 'succeeded') return r;
    await new Promise((res) => setTimeout(res, 100));
  }
}

const secondsOf = (r: ImportRun) => (r.finished_at!.getTime() - r.started_at!.getTime()) / 1000;

async function eventsOf(db: Db, runId: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from events where run_id = ${runId}::bigint and type not like 'import.%'`.execute(
    db,
  );
  return rows[0]!.n;
}

/** The three imports on one side (events on or off). */
export async function importCost(
  opts: { admin: string; redis: string; tag: string; first: string[]; month: string[] },
  on: boolean,
  log: (line: string) => void,
): Promise<ImportTimes> {
  const s = await side(opts.admin, opts.redis, opts.tag, on);
  try {
    const first = await importOnce(s, opts.first, false);
    log(
      `  events ${on ? 'on ' : 'off'}: first import ${secondsOf(first).toFixed(1)} s (${first.inserted} inserted)`,
    );
    const unchanged = await importOnce(s, opts.first, false);
    const month = await importOnce(s, opts.month, true);
    const times: ImportTimes = {
      firstS: secondsOf(first),
      unchangedS: secondsOf(unchanged),
      monthS: secondsOf(month),
      monthEvents: await eventsOf(s.db, month.id),
      unchangedEvents: await eventsOf(s.db, unchanged.id),
    };
    log(
      `  events ${on ? 'on ' : 'off'}: unchanged re-import ${times.unchangedS.toFixed(1)} s (${unchanged.unchanged} unchanged, ` +
        `${times.unchangedEvents} events); month later --full ${times.monthS.toFixed(1)} s (${month.inserted} new, ` +
        `${month.updated} updated, ${month.closed} gone; ${times.monthEvents} events)`,
    );
    return times;
  } finally {
    await teardown(opts.admin, opts.redis, s);
  }
}
