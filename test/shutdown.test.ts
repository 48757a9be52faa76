import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRun, type ImportRun } from '../ingest/import-run.js';
import { runCli, spawnCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';

/**
 * SIGTERM while a worker is inside an import: the worker exits within its shutdown deadline, what
 * is committed is whole batches only (counts and checkpoint agree), and after a restart the same
 * run finishes with the counts of one clean run.
 */
let t: TestDb;
const queue = testQueuePrefix();
let env: Record<string, string>;
let dir: string;
const workers: ChildProcess[] = [];

function startWorker(): { child: ChildProcess; exited: Promise<number | null>; stderr: () => string } {
  // A short shutdown deadline makes the worker hand the job back mid-file instead of finishing it;
  // short lock/stall settings let the next worker take it over at once.
  const child = spawnCli(
    ['worker', '--shutdown-timeout', '300', '--lock-duration', '2000', '--stalled-interval', '1000'],
    env,
  );
  workers.push(child);
  let err = '';
  child.stderr?.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, stderr: () => err };
}

async function waitForRun(id: number, until: (run: ImportRun) => boolean): Promise<ImportRun> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const run = await getRun(t.db, id);
    if (run && until(run)) return run;
    if (Date.now() > deadline) throw new Error(`run ${id} did not get there: ${JSON.stringify(run)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  t = await createTestDb();
  env = { DATABASE_URL: t.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: queue.prefix };
  dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-sigterm-'));
});

afterAll(async () => {
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  await queue.cleanup();
  await t?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('SIGTERM during an import batch', () => {
  it('hands the batch back, and the restarted worker completes the run with exact counts', async () => {
    const total = 16_000;
    const rows = Array.from({ length: total }, (_, i) =>
      registrarFields(String(3_000_000 + i).padStart(8, '0'), `SIGTERM TEST ${i} LTD`),
    );
    const file = path.join(dir, 'big.csv');
    writeFileSync(file, registrarCsv(rows));

    const first = startWorker();
    const queued = await runCli(['import', 'registrar', file], env);
    expect(queued.code).toBe(0);
    const runId = Number(/import run (\d+) queued/.exec(queued.stdout)?.[1]);

    await waitForRun(runId, (r) => r.checkpoint_rows > 0);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const handedBack = await getRun(t.db, runId);
    expect(handedBack?.status).toBe('running');
    // Only whole batches are committed: every counted row is behind the checkpoint, and the Orgs in
    // the database are exactly the rows counted as inserted (none yet while the register's rows are
    // staged; they are merged once the whole file is read).
    expect(handedBack!.checkpoint_rows).toBeLessThan(total);
    expect(handedBack!.rows_read).toBe(handedBack!.checkpoint_rows);
    const orgsAtStop = await t.db
      .selectFrom('orgs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(orgsAtStop.n)).toBe(handedBack!.inserted);

    const second = startWorker();
    const done = await waitForRun(runId, (r) => r.status !== 'running' && r.status !== 'queued');
    expect(done.status).toBe('succeeded');
    expect([
      done.rows_read,
      done.inserted,
      done.updated,
      done.unchanged,
      done.rejected,
      done.duplicates,
    ]).toEqual([total, total, 0, 0, 0, 0]);
    const orgs = await t.db
      .selectFrom('orgs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(orgs.n)).toBe(total);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 180_000);
});
