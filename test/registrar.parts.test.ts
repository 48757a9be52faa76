import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunView } from '../bin/commands/import-run.view.js';
import { getRun } from '../ingest/import-runs/import-runs.repository.js';
import { runCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { importFeed } from './support/import.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';
import { registerState } from './support/registrar-state.js';
import {
  closeCliServices,
  openCliServices,
  QUICK_TAKEOVER,
  type TestQueue,
  WorkerProcesses,
  waitForRun,
} from './support/worker.js';
import { makeZip } from './support/zip.js';

/**
 * Runs of several sources (docs/imports.md) end to end: the real CLI, the real queue, real worker processes.
 */
let t: TestDb;
let queue: TestQueue;
let env: Record<string, string>;
const workers = new WorkerProcesses(() => env);
const dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-parts-'));

const startWorker = (...args: string[]) => workers.start(['--queues', 'import', ...QUICK_TAKEOVER, ...args]);

const number = (i: number) => String(5_000_000 + i).padStart(8, '0');
/** A part file of companies [from, to), with an optional post town for all of them. */
function partFile(name: string, from: number, to: number, town = 'LONDON'): string {
  const rows = [];
  for (let i = from; i < to; i++)
    rows.push(registrarFields(number(i), `PART TEST ${i} LTD`, { 'RegAddress.PostTown': town }));
  const file = path.join(dir, name);
  writeFileSync(file, registrarCsv(rows));
  return file;
}

const showJson = async (id: number): Promise<RunView & { issues: unknown[] }> => {
  const out = await runCli(['imports', 'show', String(id), '--json'], env);
  expect(out.code).toBe(0);
  return JSON.parse(out.stdout);
};
const runIdOf = (stdout: string) => Number(/import run (\d+)/.exec(stdout)![1]);

beforeAll(async () => {
  // The parts run with IMPORT_PIPELINE=on (batches prepared on a worker thread, read two ahead), so
  // a killed worker and a resumed part are checked on that path too; other tests use the default.
  ({ t, queue, env } = await openCliServices({ IMPORT_PIPELINE: 'on' }));
});

afterAll(() => closeCliServices({ t, queue }, workers));

describe('a register run of several parts', () => {
  it('is one run: parts read in parallel by two workers, one report, --json list and show', async () => {
    const a = startWorker();
    const b = startWorker();
    const files = [
      partFile('p1.csv', 0, 6000),
      partFile('p2.csv', 6000, 12_000),
      partFile('p3.csv', 12_000, 18_000),
      partFile('p4.csv', 18_000, 24_000),
    ];
    // The last company of part 1 again in part 4 with other data: the later part wins.
    writeFileSync(
      files[3]!,
      registrarCsv([
        registrarFields(number(5999), 'PART TEST 5999 RENAMED LTD'),
        ...Array.from({ length: 6000 }, (_, k) =>
          registrarFields(number(18_000 + k), `PART TEST ${18_000 + k} LTD`),
        ),
      ]),
    );
    const result = await runCli(['import', 'registrar', ...files, '--wait'], env);
    expect(result.stderr).not.toMatch(/bizdir:/);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/queued: registrar 4 parts/);
    expect(result.stdout).toMatch(
      /24001 rows read: 24000 inserted, 0 updated, 0 unchanged, 0 rejected, 0 warnings, 1 duplicates/,
    );
    const id = runIdOf(result.stdout);
    const view = await showJson(id);
    expect(view).toMatchObject({ id, status: 'succeeded', counts: { rowsRead: 24_001, inserted: 24_000 } });
    expect(view.parts.map((p) => [p.partNo, p.status, p.counts.rowsRead])).toEqual([
      [1, 'succeeded', 6000],
      [2, 'succeeded', 6000],
      [3, 'succeeded', 6000],
      [4, 'succeeded', 6001],
    ]);
    expect(view.durationMs).toBeGreaterThan(0);
    // Parallel: some two parts were being read at the same time (two workers, one job each).
    const spans = view.parts.map((p) => [Date.parse(p.startedAt!), Date.parse(p.finishedAt!)] as const);
    const overlap = spans.some(([s1, e1], i) => spans.some(([s2, e2], j) => i !== j && s1 < e2 && s2 < e1));
    expect(overlap).toBe(true);
    const state = await registerState(t.db);
    expect(state.find((o) => o.registration_number === number(5999))).toMatchObject({
      name: 'PART TEST 5999 RENAMED LTD',
      version_number: 1,
    });

    // The same parts again: nothing written.
    const again = await runCli(['import', 'registrar', ...files, '--wait'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/0 inserted, 0 updated, 24000 unchanged/);
    expect(await registerState(t.db)).toEqual(state);

    const list = await runCli(['imports', 'list', '--json'], env);
    const runs = JSON.parse(list.stdout) as RunView[];
    expect(Array.isArray(runs)).toBe(true);
    expect(runs.map((r) => r.id).slice(0, 2)).toEqual([runIdOf(again.stdout), id]);
    expect(runs[0]!.parts).toHaveLength(4);
    await workers.stop(a);
    await workers.stop(b);
  }, 180_000);

  it('--full across parts marks once what no part holds; a broken part fails the run and marks nothing', async () => {
    const w = startWorker('--concurrency', '2');
    // Companies 0..23999 are in the database; these parts hold all but 100 of them.
    const files = [partFile('f1.csv', 0, 12_000), partFile('f2.csv', 12_000, 23_900)];
    const full = await runCli(['import', 'registrar', ...files, '--full', '--wait'], env);
    expect(full.code).toBe(0);
    // (company 5999 was renamed by the earlier run's part 4; f1 has its old name)
    expect(full.stdout).toMatch(/0 inserted, 1 updated, 23899 unchanged, .* 100 closed/);
    const again = await runCli(['import', 'registrar', ...files, '--full', '--wait'], env);
    expect(again.stdout).toMatch(/0 inserted, 0 updated, 23900 unchanged, .* 0 closed/);
    const closed = (await registerState(t.db)).filter((o) => o.left_register_on !== null);
    expect(closed).toHaveLength(100);
    expect(closed.every((o) => o.version_number === 2)).toBe(true);

    // A zip holding several CSVs (one part each) next to a file that is not the register: the good
    // parts load (YORK), the run fails, nothing is marked as gone although --full.
    const before = (await registerState(t.db)).filter((o) => o.left_register_on !== null).length;
    const zip = path.join(dir, 'parts.zip');
    writeFileSync(
      zip,
      makeZip([
        {
          name: 'a.csv',
          data: registrarCsv([
            registrarFields(number(1), 'PART TEST 1 LTD', { 'RegAddress.PostTown': 'YORK' }),
          ]),
        },
        {
          name: 'b.csv',
          data: registrarCsv([
            registrarFields(number(2), 'PART TEST 2 LTD', { 'RegAddress.PostTown': 'YORK' }),
          ]),
        },
      ]),
    );
    // The third part is the register's format but cut short inside a quoted field (a download that
    // stopped): its header passes the command's check, and the worker fails it.
    const cut = path.join(dir, 'cut.csv');
    const whole = registrarCsv([
      registrarFields(number(3), 'PART TEST 3 LTD', { 'RegAddress.PostTown': 'YORK' }),
    ]);
    writeFileSync(cut, whole.slice(0, whole.indexOf('PART TEST 3') + 4));
    const broken = await runCli(['import', 'registrar', zip, cut, '--full', '--wait'], env);
    expect(broken.code).not.toBe(0);
    expect(broken.stderr).toMatch(/failed: part 3 .*cut\.csv.* the file ends inside a quoted field/);
    const id = runIdOf(broken.stdout);
    const view = await showJson(id);
    expect(view.status).toBe('failed');
    expect(view.parts.map((p) => [p.entry, p.status])).toEqual([
      ['a.csv', 'succeeded'],
      ['b.csv', 'succeeded'],
      [null, 'failed'],
    ]);
    expect(view.counts).toMatchObject({ updated: 2, closed: 0 });
    const after = await registerState(t.db);
    expect(after.filter((o) => o.left_register_on !== null)).toHaveLength(before);
    expect(after.filter((o) => o.city === 'YORK').map((o) => o.registration_number)).toEqual([
      number(1),
      number(2),
    ]);
    // A part that is not the register at all is refused by the command itself: nothing is recorded.
    const runsBefore = await t.db.selectFrom('import_runs').select('id').execute();
    const refused = await runCli(
      ['import', 'registrar', zip, 'test/fixtures/not-register.csv', '--full'],
      env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^bizdir: .*not-register\.csv: not a company register file: missing columns/,
    );
    expect(await t.db.selectFrom('import_runs').select('id').execute()).toEqual(runsBefore);
    await workers.stop(w);
  }, 180_000);

  it('a worker killed mid-part: another resumes it, counts and records as one clean run', async () => {
    const files = [partFile('k1.csv', 30_000, 50_000, 'HULL'), partFile('k2.csv', 50_000, 52_000, 'HULL')];
    const reference = await createTestDb();
    try {
      for (const f of files) await importFeed(reference.db, 'registrar', f);
      const victim = startWorker();
      const queued = await runCli(['import', 'registrar', ...files], env);
      expect(queued.code).toBe(0);
      const id = runIdOf(queued.stdout);
      await waitForRun(t.db, id, (r) => r.checkpoint_rows > 0);
      await workers.stop(victim, 'SIGKILL');
      const atKill = (await getRun(t.db, id))!;
      expect(atKill.status).toBe('running');
      expect(atKill.checkpoint_rows).toBeLessThan(22_000);
      const rescuer = startWorker();
      const done = await waitForRun(t.db, id, (r) => r.status !== 'running' && r.status !== 'queued');
      expect(done).toMatchObject({
        status: 'succeeded',
        rows_read: 22_000,
        inserted: 22_000,
        updated: 0,
        duplicates: 0,
      });
      const mine = (await registerState(t.db)).filter((o) => o.city === 'HULL');
      const theirs = await registerState(reference.db);
      expect(mine).toEqual(theirs);
      await workers.stop(rescuer);
    } finally {
      await reference.drop();
    }
  }, 180_000);
});
