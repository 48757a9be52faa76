import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { comparePositions, decodeCursor } from '../events/event-cursor.js';
import { getRun, type ImportRun } from '../ingest/import-runs/import-runs.repository.js';
import { runCli } from './support/cli.js';
import type { TestDb } from './support/db.js';
import { expectUnbrokenVersions, feedEvents, recordEvents, tempFile } from './support/events.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';
import {
  closeCliServices,
  openCliServices,
  type TestQueue,
  WorkerProcesses,
  waitForRun,
} from './support/worker.js';

/**
 * A worker killed (SIGKILL) in the middle of a register import's merge, the run then finished by
 * another worker: the chunk in flight rolled back with its events, the rest are written once, so
 * every record's events still carry its versions 1..n with none twice (test/support/events.ts),
 * for a first import and for a month-later `--full` one.
 */
let t: TestDb;
let queue: TestQueue;
let env: Record<string, string>;
const workers = new WorkerProcesses(() => env);

beforeAll(async () => {
  ({ t, queue, env } = await openCliServices());
});

afterAll(() => closeCliServices({ t, queue }, workers));

const COMPANIES = 20_000;
const number = (i: number) => String(3_000_000 + i).padStart(8, '0');

/** Queues an import, kills its worker once the merge has committed a chunk, and lets another finish it. */
async function importKilledMidMerge(file: string, options: string[] = []): Promise<ImportRun> {
  const victim = workers.start();
  const queued = await runCli(['import', 'registrar', file, ...options], env);
  expect(queued.code).toBe(0);
  const runId = Number(/import run (\d+) queued/.exec(queued.stdout)![1]);
  await waitForRun(t.db, runId, (r) => Number(r.merged_rows) > 0, { pollMs: 10 });
  await workers.stop(victim, 'SIGKILL');
  const atKill = (await getRun(t.db, runId))!;
  expect(atKill.status).toBe('running');
  expect(Number(atKill.merged_rows)).toBeLessThan(COMPANIES);
  const rescuer = workers.start();
  const done = await waitForRun(t.db, runId, (r) => r.status !== 'running' && r.status !== 'queued', {
    pollMs: 10,
  });
  await workers.stop(rescuer);
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
