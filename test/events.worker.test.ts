import type { ChildProcess } from 'node:child_process';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { comparePositions, decodeCursor } from '../events/event-cursor.js';
import { getRun, type ImportRun } from '../ingest/import-runs/import-runs.repository.js';
import { runCli, spawnCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { expectUnbrokenVersions, feedEvents, recordEvents, tempFile } from './support/events.js';
import { testQueuePrefix } from './support/redis.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';

/**
 * A worker killed (SIGKILL) in the middle of a register import's merge, the run then finished by
 * another worker: the chunk in flight rolled back with its events, the rest are written once, so
 * every record's events still carry its versions 1..n with none twice (test/support/events.ts),
 * for a first import and for a month-later `--full` one.
 */
let t: TestDb;
let queue: ReturnType<typeof testQueuePrefix>;
let env: Record<string, string>;
const workers: ChildProcess[] = [];

function startWorker(): ChildProcess {
  const child = spawnCli(['worker', '--lock-duration', '2000', '--stalled-interval', '1000'], env);
  workers.push(child);
  return child;
}

async function stopWorker(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

async function waitForRun(id: number, until: (run: ImportRun) => boolean, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await getRun(t.db, id);
    if (run && until(run)) return run;
    if (Date.now() > deadline) throw new Error(`run ${id} did not get there: ${JSON.stringify(run)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

beforeAll(async () => {
  t = await createTestDb();
  queue = testQueuePrefix();
  env = { DATABASE_URL: t.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: queue.prefix };
});

afterAll(async () => {
  for (const w of workers) await stopWorker(w, 'SIGKILL');
  await queue?.cleanup();
  await t?.drop();
});

const COMPANIES = 20_000;
const number = (i: number) => String(3_000_000 + i).padStart(8, '0');

/** Queues an import, kills its worker once the merge has committed a chunk, and lets another finish it. */
async function importKilledMidMerge(file: string, options: string[] = []): Promise<ImportRun> {
  const victim = startWorker();
  const queued = await runCli(['import', 'registrar', file, ...options], env);
  expect(queued.code).toBe(0);
  const runId = Number(/import run (\d+) queued/.exec(queued.stdout)![1]);
  await waitForRun(runId, (r) => Number(r.merged_rows) > 0);
  await stopWorker(victim, 'SIGKILL');
  const atKill = (await getRun(t.db, runId))!;
  expect(atKill.status).toBe('running');
  expect(Number(atKill.merged_rows)).toBeLessThan(COMPANIES);
  const rescuer = startWorker();
  const done = await waitForRun(runId, (r) => r.status !== 'running' && r.status !== 'queued');
  await stopWorker(rescuer);
  expect(done.status).toBe('succeeded');
  return done;
}

describe('events when a worker is killed mid-import', () => {
  it('a first import killed mid-merge and resumed: one org.created per company, versions unbroken', async () => {
    const rows = Array.from({ length: COMPANIES }, (_, i) =>
      registrarFields(number(i), `KILLED MERGE ${i} LTD`, { 'RegAddress.PostTown': `TOWN ${i % 89}` }),
    );
    const run = await importKilledMidMerge(tempFile('first.csv', registrarCsv(rows)));
    expect(run.inserted).toBe(COMPANIES);
    const events = await recordEvents(t.db);
    expect(events.filter((e) => e.type === 'org.created')).toHaveLength(COMPANIES);
    expect(events).toHaveLength(2 * COMPANIES);
    await expectUnbrokenVersions(t.db);
  }, 240_000);

  it('a month-later --full import killed mid-merge and resumed: renames, moves, gone and new, each once', async () => {
    // 5 % renamed, 5 % moved, 2 % gone, 1,000 new.
    const rows = Array.from({ length: COMPANIES }, (_, i) => i)
      .filter((i) => i % 50 !== 7)
      .map((i) =>
        registrarFields(number(i), i % 20 === 3 ? `RENAMED MERGE ${i} LTD` : `KILLED MERGE ${i} LTD`, {
          'RegAddress.PostTown': i % 20 === 11 ? 'MOVED TOWN' : `TOWN ${i % 89}`,
        }),
      );
    for (let i = COMPANIES; i < COMPANIES + 1_000; i++)
      rows.push(registrarFields(number(i), `NEW MERGE ${i} LTD`));
    const run = await importKilledMidMerge(tempFile('next.csv', registrarCsv(rows)), ['--full']);
    const gone = COMPANIES / 50;
    expect(run).toMatchObject({ inserted: 1_000, closed: gone });
    const { rows: bumped } = await sql<{ n: number }>`
      select count(*)::int as n from orgs where version_number > 1`.execute(t.db);
    const mine = (await feedEvents(t.db, { types: ['import.completed'] })).at(-1)!;
    const first = decodeCursor(mine.data.first_id as string);
    const ofRun = (await recordEvents(t.db)).filter((e) => comparePositions(decodeCursor(e.id), first) >= 0);
    const count = (type: string) => ofRun.filter((e) => e.type === type).length;
    expect(count('org.left_register')).toBe(gone);
    expect(count('org.created')).toBe(1_000);
    expect(count('org.updated') + count('org.left_register')).toBe(bumped[0]!.n);
    expect(count('address.updated')).toBe(COMPANIES / 20);
    await expectUnbrokenVersions(t.db);
  }, 240_000);
});
