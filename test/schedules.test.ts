import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertCron, assertTimeZone, nextRun } from '../jobs/schedules/cron.js';
import { upsertSchedule } from '../jobs/schedules/schedule.repository.js';
import {
  processRunSchedule,
  type RunSchedulePayload,
  reconcileSchedules,
  runSchedule,
  SCHEDULE_QUEUE,
  schedulerIdOf,
  upsertScheduler,
} from '../jobs/schedules/scheduler.js';
import { runCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';

let tdb: TestDb;
let tmp: string;
const queues: Queue[] = [];
const cleanups: Array<() => Promise<void>> = [];

function newQueue(prefix: string): Queue {
  const queue = new Queue(SCHEDULE_QUEUE, { connection: { url: TEST_REDIS_URL }, prefix });
  queues.push(queue);
  return queue;
}

function freshPrefix(): string {
  const q = testQueuePrefix();
  cleanups.push(q.cleanup);
  return q.prefix;
}

beforeAll(async () => {
  tdb = await createTestDb();
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'bizdir-sched-'));
});

afterAll(async () => {
  await Promise.all(queues.map((q) => q.close()));
  for (const cleanup of cleanups) await cleanup();
  await tdb.drop();
  await fs.rm(tmp, { recursive: true, force: true });
});

/** A run's fake import: marks it succeeded, as the import-feed processor would. */
async function succeed(runId: number) {
  await tdb.db
    .updateTable('import_runs')
    .set({ status: 'succeeded', finished_at: new Date() })
    .where('id', '=', runId)
    .execute();
}

describe('bizdir schedule set / list / remove', () => {
  it('stores the schedule in Postgres, applies it to BullMQ and lists next and last run', async () => {
    const prefix = freshPrefix();
    const env = { DATABASE_URL: tdb.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix, DATA_DIR: tmp };
    const feed = path.join(tmp, 'companies.csv');
    await fs.writeFile(feed, 'CompanyName, CompanyNumber\n');

    const set = await runCli(
      [
        'schedule',
        'set',
        'nightly',
        '--feed',
        'registrar',
        '--source',
        feed,
        '--cron',
        '0 3 * * *',
        '--full',
      ],
      env,
    );
    expect(set.stderr).toBe('');
    expect(set.code).toBe(0);
    expect(set.stdout).toContain('schedule nightly saved');

    const bad = await runCli(
      ['schedule', 'set', 'x', '--feed', 'registrar', '--source', feed, '--cron', '61 * * * *'],
      env,
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/invalid cron expression/);

    const schedulers = await newQueue(prefix).getJobSchedulers(0, -1);
    expect(schedulers.map((s) => [s.key, s.pattern, s.tz])).toEqual([
      [schedulerIdOf('nightly'), '0 3 * * *', 'UTC'],
    ]);

    const list = await runCli(['schedule', 'list', '--json'], env);
    const rows = JSON.parse(list.stdout) as Array<Record<string, unknown>>;
    expect(rows).toEqual([
      {
        name: 'nightly',
        job: 'import',
        feed: 'registrar',
        source: feed,
        sources: [{ template: feed, next: [feed] }],
        next_period: null,
        fallback_periods: [],
        cron: '0 3 * * *',
        tz: 'UTC',
        options: { country: 'GB', full: true },
        when_grown: null,
        next_run: expect.stringMatching(/T03:00:00Z$/),
        last_run: null,
      },
    ]);

    const fired = await runSchedule(
      { db: tdb.db, enqueueImport: async (id) => `import-run-${id}` },
      'nightly',
      new Date('2026-01-01T03:00:00Z'),
    );
    expect(fired.outcome).toBe('queued');
    const table = await runCli(['schedule', 'list'], env);
    expect(table.stdout).toMatch(
      /nightly\s+registrar --full\s+0 3 \* \* \* \(UTC\)\s+\S+T03:00:00Z\s+#\d+ \S+\s+queued/,
    );

    const removed = await runCli(['schedule', 'remove', 'nightly'], env);
    expect(removed.code).toBe(0);
    expect(await newQueue(prefix).getJobSchedulers(0, -1)).toEqual([]);
    const again = await runCli(['schedule', 'remove', 'nightly'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('no schedule named nightly');
  }, 120_000);
});

describe('schedule definitions', () => {
  it('refuse unknown time zones and malformed cron expressions', () => {
    expect(() => assertTimeZone('Mars/Base')).toThrow(/unknown time zone "Mars\/Base"/);
    expect(() => assertTimeZone('Europe/London')).not.toThrow();
    expect(() => assertCron('0 3 * *', 'UTC')).toThrow(/expected 5 fields/);
    expect(() => assertCron('0 25 * * *', 'UTC')).toThrow(/invalid cron expression/);
  });
});

describe('next run', () => {
  it('reads the cron expression in the schedule time zone', () => {
    const from = new Date('2026-07-01T12:00:00Z');
    expect(nextRun('0 3 * * *', 'UTC', from).toISOString()).toBe('2026-07-02T03:00:00.000Z');
    // 03:00 in London during summer time is 02:00 UTC.
    expect(nextRun('0 3 * * *', 'Europe/London', from).toISOString()).toBe('2026-07-02T02:00:00.000Z');
  });
});

describe('reconciliation', () => {
  it('re-creates schedulers after a Redis flush and drops ones no longer in Postgres', async () => {
    const prefix = freshPrefix();
    const queue = newQueue(prefix);
    await upsertSchedule(tdb.db, {
      name: 'rec-a',
      feed: 'registrar',
      sources: ['/nowhere/a.csv'],
      cron: '0 4 * * *',
      tz: 'UTC',
      options: {},
    });
    await upsertSchedule(tdb.db, {
      name: 'rec-b',
      feed: 'locations',
      sources: ['https://example.invalid/b.csv'],
      cron: '30 5 * * 1',
      tz: 'Europe/London',
      options: { full: true },
    });
    // A stale scheduler of a schedule deleted while no worker ran.
    await upsertScheduler(queue, 'rec-gone', '0 1 * * *', 'UTC');

    const first = await reconcileSchedules(tdb.db, queue);
    expect(first.upserted.filter((n) => n.startsWith('rec-')).sort()).toEqual(['rec-a', 'rec-b']);
    expect(first.removed).toEqual(['rec-gone']);

    // Same state: nothing moves (a re-upsert would shift the next slot).
    const second = await reconcileSchedules(tdb.db, queue);
    expect(second.upserted).toEqual([]);

    // The flush: every key of this queue prefix is gone, as after FLUSHALL.
    const redis = new Redis(TEST_REDIS_URL);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    expect(await queue.getJobSchedulers(0, -1)).toEqual([]);

    const third = await reconcileSchedules(tdb.db, queue);
    expect(third.upserted.filter((n) => n.startsWith('rec-')).sort()).toEqual(['rec-a', 'rec-b']);
    const restored = await queue.getJobSchedulers(0, -1);
    const mine = restored.filter((s) => s.key.startsWith('schedule:rec-'));
    expect(mine.map((s) => [s.key, s.pattern, s.tz]).sort()).toEqual([
      ['schedule:rec-a', '0 4 * * *', 'UTC'],
      ['schedule:rec-b', '30 5 * * 1', 'Europe/London'],
    ]);
    // The next delayed firing job exists again for each.
    expect(mine.every((s) => typeof s.next === 'number' && s.next > Date.now())).toBe(true);
  });
});

describe('a scheduled run', () => {
  it('is skipped when the source did not change since the last successful run', async () => {
    const feed = path.join(tmp, 'skip.csv');
    await fs.writeFile(feed, 'a,b\n1,2\n');
    await upsertSchedule(tdb.db, {
      name: 'skip',
      feed: 'registrar',
      sources: [feed],
      cron: '0 * * * *',
      tz: 'UTC',
      options: {},
    });
    const enqueued: number[] = [];
    const deps = {
      db: tdb.db,
      enqueueImport: async (id: number) => {
        enqueued.push(id);
        return `import-run-${id}`;
      },
    };

    const r1 = await runSchedule(deps, 'skip', new Date('2026-01-01T01:00:00Z'));
    expect(r1.outcome).toBe('queued');
    // Not yet succeeded: the next slot must not skip on a run that may still fail.
    const r2 = await runSchedule(deps, 'skip', new Date('2026-01-01T02:00:00Z'));
    expect(r2.outcome).toBe('queued');
    if (r2.outcome !== 'queued') throw new Error('unreachable');
    await succeed(r2.runId);

    const r3 = await runSchedule(deps, 'skip', new Date('2026-01-01T03:00:00Z'));
    expect(r3.outcome).toBe('skipped');
    if (r3.outcome !== 'skipped') throw new Error('unreachable');
    const skipped = await tdb.db
      .selectFrom('import_runs')
      .selectAll()
      .where('id', '=', r3.runId)
      .executeTakeFirstOrThrow();
    expect(skipped).toMatchObject({
      status: 'skipped',
      schedule_name: 'skip',
      feed: 'registrar',
      source: feed,
    });
    expect(skipped.finished_at).toBeInstanceOf(Date);

    // Same size, different bytes: the checksum tells them apart.
    await fs.writeFile(feed, 'a,b\n1,3\n');
    const r4 = await runSchedule(deps, 'skip', new Date('2026-01-01T04:00:00Z'));
    expect(r4.outcome).toBe('queued');
    expect(enqueued).toHaveLength(3);
  });

  it('runs once per slot however many times the slot is seen', async () => {
    const feed = path.join(tmp, 'once.csv');
    await fs.writeFile(feed, 'x\n');
    await upsertSchedule(tdb.db, {
      name: 'once',
      feed: 'registrar',
      sources: [feed],
      cron: '0 * * * *',
      tz: 'UTC',
      options: {},
    });
    const deps = { db: tdb.db, enqueueImport: async (id: number) => `import-run-${id}` };
    const slot = new Date('2026-02-01T00:00:00Z');
    const outcomes = await Promise.all([1, 2, 3, 4].map(() => runSchedule(deps, 'once', slot)));
    expect(outcomes.filter((o) => o.outcome === 'queued')).toHaveLength(1);
    const runs = await tdb.db
      .selectFrom('import_runs')
      .select('id')
      .where('schedule_name', '=', 'once')
      .execute();
    expect(runs).toHaveLength(1);
  });

  it('with two workers on one queue, one firing makes one import run', async () => {
    const prefix = freshPrefix();
    const queue = newQueue(prefix);
    const feed = path.join(tmp, 'two.csv');
    await fs.writeFile(feed, 'y\n');
    // A six-field (per-second) cron keeps this test to about a second of real time.
    await upsertSchedule(tdb.db, {
      name: 'two',
      feed: 'registrar',
      sources: [feed],
      cron: '* * * * * *',
      tz: 'UTC',
      options: {},
    });
    const enqueued: number[] = [];
    const deps = {
      db: tdb.db,
      enqueueImport: async (id: number) => {
        enqueued.push(id);
        return `import-run-${id}`;
      },
    };
    const processed: string[] = [];
    let resolveFirst: () => void = () => {};
    const first = new Promise<void>((r) => {
      resolveFirst = r;
    });
    const workers = [1, 2].map(
      () =>
        new Worker<RunSchedulePayload>(
          SCHEDULE_QUEUE,
          async (job: Job<RunSchedulePayload>) => {
            const outcome = await processRunSchedule(deps, job);
            processed.push(String(job.id));
            resolveFirst();
            return outcome;
          },
          { connection: { url: TEST_REDIS_URL, maxRetriesPerRequest: null }, prefix, concurrency: 2 },
        ),
    );
    await reconcileSchedules(tdb.db, queue);
    await first;
    await Promise.all(workers.map((w) => w.close()));
    await queue.removeJobScheduler(schedulerIdOf('two'));

    const runs = await tdb.db
      .selectFrom('import_runs')
      .select(['id', 'scheduled_for'])
      .where('schedule_name', '=', 'two')
      .execute();
    // Each processed firing is one distinct job, and each made exactly one run for its own slot.
    expect(new Set(processed).size).toBe(processed.length);
    expect(runs).toHaveLength(processed.length);
    expect(new Set(runs.map((r) => r.scheduled_for?.toISOString())).size).toBe(runs.length);
    expect(enqueued).toHaveLength(runs.length);
  });
});
