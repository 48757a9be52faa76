import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRun, type ImportRun } from '../ingest/import-runs/import-runs.repository.js';
import { collectOutput, runCli, spawnCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { importFeed } from './support/import.js';
import { testQueuePrefix } from './support/redis.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';
import { registerState } from './support/registrar-state.js';
import { freePort } from './support/tcp-proxy.js';
import { eventually } from './support/wait.js';
import {
  closeCliServices,
  openCliServices,
  type TestQueue,
  WorkerProcesses,
  waitForRun,
} from './support/worker.js';

/**
 * The registrar import end to end through the real CLI, the real queue and real worker processes.
 * Workers use short lock and stall settings so a killed worker's job is taken over within seconds.
 */
let t: TestDb;
let queue: TestQueue;
let env: Record<string, string>;
const workers = new WorkerProcesses(() => env);

async function withImportQueue<T>(fn: (q: Queue) => Promise<T>): Promise<T> {
  const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  const q = new Queue('import', { connection, prefix: queue.prefix });
  try {
    return await fn(q);
  } finally {
    await q.close();
    connection.disconnect();
  }
}

beforeAll(async () => {
  ({ t, queue, env } = await openCliServices());
});

afterAll(() => closeCliServices({ t, queue }, workers));

describe('registrar import through the queue', () => {
  it('imports with --wait, reports counts and rejected rows, and a second import writes nothing', async () => {
    const worker = workers.start();
    const first = await runCli(['import', 'registrar', 'test/fixtures/registrar-small.csv', '--wait'], env);
    expect(first.stderr).not.toMatch(/bizdir:/);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(
      /import run 1 succeeded: 10 rows read: 8 inserted, 0 updated, 0 unchanged, 2 rejected, 1 warnings/,
    );
    const before = await registerState(t.db);

    const second = await runCli(['import', 'registrar', 'test/fixtures/registrar-small.csv', '--wait'], env);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/0 inserted, 0 updated, 8 unchanged/);
    expect(await registerState(t.db)).toEqual(before);

    const show = await runCli(['imports', 'show', '1'], env);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/line 10 {2}rejected {2}CompanyNumber: missing company number/);
    expect(show.stdout).toMatch(/line 11 {2}rejected {2}wrong column count: expected 55 fields, found 4/);
    expect(show.stdout).toMatch(/line 9 {2}warning {2}IncorporationDate: impossible date "31\/02\/2019"/);
    const list = await runCli(['imports', 'list'], env);
    expect(list.stdout.split('\n').filter((l) => /^\d+\s+registrar\s+succeeded/.test(l))).toHaveLength(2);

    // A file of another format is refused by the command: nothing recorded, nothing queued.
    const other = await runCli(['import', 'registrar', 'test/fixtures/not-register.csv', '--wait'], env);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(
      /^bizdir: .*not-register\.csv: not a company register file: missing columns/,
    );
    // One the worker refuses (its header is right, it has no rows) fails the run without retries,
    // exits non-zero and changes nothing.
    const empty = path.join(mkdtempSync(path.join(os.tmpdir(), 'bizdir-empty-')), 'header-only.csv');
    writeFileSync(empty, registrarCsv([]));
    const bad = await runCli(['import', 'registrar', empty, '--wait'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/import run 3 failed: .*the file has a header but no data rows/);
    expect(await registerState(t.db)).toEqual(before);
    await withImportQueue(async (q) => {
      // The job mirrors the run's progress; a bad file is not retried (UnrecoverableError).
      expect((await q.getJob('import-run-1'))?.progress).toMatchObject({
        runId: 1,
        status: 'succeeded',
        rowsRead: 10,
      });
      const badJob = await q.getJob('import-run-3');
      expect(await badJob?.getState()).toBe('failed');
      expect(badJob?.attemptsMade).toBe(1);
    });
    await workers.stop(worker);
    expect(worker.exitCode).toBe(0);
  }, 120_000);

  it('refuses a missing local file before anything is recorded or enqueued', async () => {
    const runsBefore = await t.db.selectFrom('import_runs').select('id').execute();
    const result = await runCli(['import', 'registrar', 'test/fixtures/no-such-file.csv'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/file not found: .*no-such-file\.csv/);
    expect(await t.db.selectFrom('import_runs').select('id').execute()).toEqual(runsBefore);
    const counts = await withImportQueue((q) => q.getJobCounts('wait', 'delayed', 'active'));
    expect(counts).toEqual({ wait: 0, delayed: 0, active: 0 });
  }, 60_000);

  it('refuses a malformed URL and a run id past 2^53 with a clear message', async () => {
    const runsBefore = await t.db.selectFrom('import_runs').select('id').execute();
    for (const url of ['http://', 'https://exa mple.com/BasicCompanyData.zip']) {
      const result = await runCli(['import', 'registrar', url], env);
      expect({ code: result.code, stderr: result.stderr }).toEqual({
        code: 1,
        stderr: `bizdir: "${url}" is not a valid URL\n`,
      });
    }
    expect(await t.db.selectFrom('import_runs').select('id').execute()).toEqual(runsBefore);
    const show = await runCli(['imports', 'show', '99999999999999999999'], env);
    expect({ code: show.code, stderr: show.stderr }).toEqual({
      code: 1,
      stderr: `bizdir: id must be a positive integer (at most ${Number.MAX_SAFE_INTEGER})\n`,
    });
  }, 60_000);

  it('refuses worker and reindex options that cannot work, with a clear message', async () => {
    const cases: [string[], string][] = [
      [
        ['worker', '--queues', ','],
        'bizdir: --queues names no queue (known: import, index, events, webhooks)\n',
      ],
      [
        ['worker', '--queues', 'imports'],
        'bizdir: unknown queue imports (known: import, index, events, webhooks)\n',
      ],
      [['worker', '--concurrency', '0'], 'bizdir: --concurrency must be a positive integer\n'],
      [
        ['reindex', '--verify', '--wait'],
        'bizdir: --wait and --verify do different things: give one (--verify only reads)\n',
      ],
    ];
    for (const [args, stderr] of cases) {
      const result = await runCli(args, env);
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({ args, code: 1, stderr });
    }
  }, 120_000);

  it('with Redis unreachable, import and reindex fail at once with a clear message, and no run is recorded', async () => {
    const port = await freePort();
    const away = { ...env, REDIS_URL: `redis://127.0.0.1:${port}` };
    const runsBefore = await t.db.selectFrom('import_runs').select('id').execute();
    for (const args of [['import', 'registrar', 'test/fixtures/registrar-small.csv'], ['reindex']]) {
      const started = Date.now();
      // Before the fix, BullMQ waited for the connection for ever: the 60 s bound fails the test.
      const result = await runCli(args, away, 60_000);
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({
        args,
        code: 1,
        stderr: `bizdir: cannot reach Redis (connect ECONNREFUSED 127.0.0.1:${port}); is it running, and is REDIS_URL right?\n`,
      });
      expect(Date.now() - started).toBeLessThan(55_000);
    }
    expect(await t.db.selectFrom('import_runs').select('id').execute()).toEqual(runsBefore);
  }, 150_000);

  it('--wait with no worker says so once, and finishes when a worker starts', async () => {
    const own = testQueuePrefix();
    const ownEnv = { ...env, QUEUE_PREFIX: own.prefix };
    try {
      const follower = collectOutput(
        spawnCli(['import', 'registrar', 'test/fixtures/registrar-small.csv', '--wait'], ownEnv),
      );
      await eventually(() => follower.stderr().includes('no worker is taking import jobs'), {
        timeoutMs: 60_000,
      });
      expect(follower.stderr()).toMatch(
        /^run \d+ is queued, but no worker is taking import jobs: start one with `bizdir worker`/m,
      );
      const worker = workers.start([], ownEnv);
      expect(await follower.exited).toBe(0);
      expect(follower.stdout()).toMatch(/import run \d+ succeeded: /);
      expect(follower.stderr().match(/no worker is taking/g)).toHaveLength(1);
      // What the check asks: a running worker is seen, so a queued run with one says nothing.
      const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
      const q = new Queue('import', { connection, prefix: own.prefix });
      expect((await q.getWorkers()).length).toBeGreaterThan(0);
      await q.close();
      connection.disconnect();
      await workers.stop(worker);
    } finally {
      await own.cleanup();
    }
  }, 150_000);

  it('output piped into a reader that stops early ends quietly', async () => {
    const child = spawnCli(['imports', 'list', '--limit', '100'], env);
    let stderr = '';
    child.stderr?.on('data', (d) => {
      stderr += d;
    });
    // The reader takes nothing and goes away, as `| head -0` does.
    child.stdout?.destroy();
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  }, 60_000);

  it('a worker killed mid-file, then the job retried by another worker, gives the database of one clean run', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-kill-'));
    const rows = Array.from({ length: 24_000 }, (_, i) =>
      registrarFields(String(2_000_000 + i).padStart(8, '0'), `KILL TEST ${i} LTD`, {
        'RegAddress.PostTown': `TOWN ${i % 97}`,
      }),
    );
    // An Org from the earlier test changes too, to prove a resumed run does not bump it twice.
    rows.splice(
      20_000,
      0,
      registrarFields('07687209', 'ACME WIDGETS LTD.', { 'RegAddress.PostTown': 'HULL' }),
    );
    const big = path.join(dir, 'big.csv');
    writeFileSync(big, registrarCsv(rows));

    const reference = await createTestDb();
    try {
      await importFeed(reference.db, 'registrar', 'test/fixtures/registrar-small.csv');
      const clean = await importFeed(reference.db, 'registrar', big);

      const victim = workers.start();
      const queued = await runCli(['import', 'registrar', big], env);
      expect(queued.code).toBe(0);
      const runId = Number(/import run (\d+) queued/.exec(queued.stdout)![1]);
      const partway = await waitForRun(t.db, runId, (r) => r.checkpoint_rows > 0);
      await workers.stop(victim, 'SIGKILL');
      const atKill = (await getRun(t.db, runId))!;
      expect(atKill.status).toBe('running');
      expect(atKill.checkpoint_rows).toBeGreaterThanOrEqual(partway.checkpoint_rows);
      expect(atKill.checkpoint_rows).toBeLessThan(rows.length);

      const rescuer = workers.start();
      const done = await waitForRun(t.db, runId, (r) => r.status !== 'running' && r.status !== 'queued');
      expect(done.status).toBe('succeeded');
      const counts = (r: ImportRun) => [
        r.rows_read,
        r.inserted,
        r.updated,
        r.unchanged,
        r.rejected,
        r.duplicates,
      ];
      expect(counts(done)).toEqual(counts(clean));
      expect(counts(done)).toEqual([24_001, 24_000, 1, 0, 0, 0]);
      expect(await registerState(t.db)).toEqual(await registerState(reference.db));
      await workers.stop(rescuer);
    } finally {
      await reference.drop();
    }
  }, 180_000);
});
