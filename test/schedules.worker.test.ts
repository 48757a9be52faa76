import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertSchedule } from '../jobs/schedules/schedule.repository.js';
import { type RunningWorkers, startWorkers } from '../jobs/worker.js';
import { createRedis } from '../shared/redis.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';
import { eventually } from './support/wait.js';
import { inProcessWorkerDeps } from './support/worker.js';

/**
 * A schedule through the real worker: the worker reconciles it into a BullMQ job scheduler at
 * start, a firing makes an ordinary import run (same counts and rejects as `bizdir import`), and
 * the next firing of the unchanged file is recorded as skipped. A per-second cron keeps it short.
 */
let t: TestDb;
const queue = testQueuePrefix();
let dir: string;
let running: RunningWorkers | undefined;
const redis = createRedis(TEST_REDIS_URL, 'worker');

beforeAll(async () => {
  t = await createTestDb();
  dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-sched-worker-'));
});

afterAll(async () => {
  await running?.close(5_000);
  redis.disconnect();
  await queue.cleanup();
  await t?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function runsOf(name: string) {
  return t.db.selectFrom('import_runs').selectAll().where('schedule_name', '=', name).orderBy('id').execute();
}

describe('a schedule run by the worker', () => {
  it('imports on its first firing and records later firings of the unchanged file as skipped', async () => {
    const file = path.join(dir, 'registrar.csv');
    copyFileSync('test/fixtures/registrar-small.csv', file);
    await upsertSchedule(t.db, {
      name: 'every-second',
      feed: 'registrar',
      sources: [file],
      cron: '* * * * * *',
      tz: 'UTC',
      options: { country: 'GB', full: false },
    });
    const deps = inProcessWorkerDeps(t, queue.prefix, redis);
    running = startWorkers(deps, { queues: ['import'] });

    await eventually(
      () => runsOf('every-second'),
      (runs) => runs.some((r) => r.status === 'skipped'),
      { timeoutMs: 60_000 },
    );
    await running.close(5_000);
    running = undefined;
    const runs = await runsOf('every-second');

    const first = runs[0]!;
    // The same figures `bizdir import registrar test/fixtures/registrar-small.csv` reports.
    expect(first).toMatchObject({
      status: 'succeeded',
      feed: 'registrar',
      rows_read: 10,
      inserted: 8,
      rejected: 2,
    });
    expect(first.job_id).toBe(`import-run-${first.id}`);
    const rejects = await t.db
      .selectFrom('import_rejects')
      .select('run_id')
      .where('run_id', '=', first.id)
      .execute();
    expect(rejects.length).toBeGreaterThanOrEqual(2);
    const later = runs.slice(1).filter((r) => r.status !== 'queued' && r.status !== 'running');
    expect(later.length).toBeGreaterThan(0);
    expect(later.every((r) => r.status === 'skipped' && r.inserted === 0)).toBe(true);
    // One run per slot.
    expect(new Set(runs.map((r) => r.scheduled_for?.toISOString())).size).toBe(runs.length);
    const orgs = await t.db.selectFrom('orgs').select('id').execute();
    expect(orgs).toHaveLength(8);
  }, 90_000);
});
