import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForRun } from '../bin/commands/import-run.wait.js';
import { feedHandler } from '../ingest/feeds.js';
import { failRun, getRun } from '../ingest/import-runs/import-runs.repository.js';
import { createImportRun } from '../ingest/import-runs/import-runs.state.js';
import { runImport } from '../ingest/run/run-import.js';
import { createQueue, enqueueImportRun, type TypedQueue } from '../jobs/queue.js';
import { createWorkerDeps, type RunningWorkers, startWorkers } from '../jobs/worker.js';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { createRedis } from '../shared/redis.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { FEED_CONFIG, importFeed } from './support/import.js';
import { testQueuePrefix } from './support/redis.js';

/**
 * A location run's scratch lists (import_run_keys: the keys it met unchanged; import_run_firsts: the
 * first row of each Org in a `--full` sheet) are read by its last step only, which closes the
 * Locations whose keys it did not meet. They must outlive every attempt that may still take that
 * step (a retry resumes after the rows whose keys it recorded), and go once none can.
 */

const HEADER = 'Store code,Business name,Address line 1,Locality,Country / Region';
// More than one batch (5,000 rows), so a run can fail with a batch committed and a batch to go.
const STORES = 6_000;
const rowOf = (i: number) => `KK-${String(i).padStart(5, '0')},Keyed Kiosks,${i} Dock Road,Hull,GB`;
const ALL = Array.from({ length: STORES }, (_, i) => rowOf(i));

let t: TestDb;
const queue = testQueuePrefix();
const redis = createRedis(TEST_REDIS_URL, 'worker');
let running: RunningWorkers | undefined;
let producer: TypedQueue<'import'>;
let dir: string;

beforeAll(async () => {
  t = await createTestDb();
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bizdir-run-keys-'));
  const config = loadConfig({
    DATABASE_URL: t.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: queue.prefix,
    LOG_LEVEL: 'silent',
  });
  running = startWorkers(createWorkerDeps(config, t.db, redis, createLogger(config)), { queues: ['import'] });
  // The default attempts (3), retried at once instead of after seconds of backoff.
  producer = createQueue('import', {
    connection: redis,
    prefix: queue.prefix,
    defaultJobOptions: { backoff: { type: 'fixed', delay: 100 } },
  });
  expect(await importFeed(t.db, 'locations', await sheet(ALL))).toMatchObject({ inserted: STORES });
  // A batch that reaches the rows after the first 5,000 of a run named in fail_batches fails as a
  // lost connection would (a passing error: the job is retried), before it commits. `times` says
  // how often (a sequence, so the count survives the failing transaction's rollback).
  await sql`create table fail_batches (run_id bigint primary key, times int not null)`.execute(t.db);
  await sql`create sequence fail_batches_seen`.execute(t.db);
  await sql`
    create function fail_batch() returns trigger language plpgsql as $$
    begin
      if new.rows_read > 5000 and old.rows_read <= 5000
         and exists (select 1 from fail_batches f where f.run_id = new.id
                     and f.times >= nextval('fail_batches_seen')) then
        raise exception 'connection lost (injected by the test)';
      end if;
      return new;
    end $$`.execute(t.db);
  await sql`create trigger fail_batch before update on import_runs for each row execute function fail_batch()`.execute(
    t.db,
  );
}, 120_000);

afterAll(async () => {
  await running?.close(5_000);
  await producer?.close();
  redis.disconnect();
  await queue.cleanup();
  await t?.drop();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

let sheets = 0;
async function sheet(rows: readonly string[]): Promise<string> {
  const file = path.join(dir, `sheet-${++sheets}.csv`);
  await fs.writeFile(file, `${HEADER}\n${rows.join('\n')}\n`);
  return file;
}

/** A `--full` run of `rows`, recorded and not started. */
async function fullRun(rows: readonly string[], options: { maxGone?: string } = {}): Promise<number> {
  const run = await createImportRun(t.db, {
    feed: 'locations',
    parts: [{ source: await sheet(rows), entry: null }],
    options: feedHandler('locations')!.parseOptions({ full: true, ...options }),
  });
  return run.id;
}

async function failBatchesOf(runId: number, times: number): Promise<void> {
  await sql`alter sequence fail_batches_seen restart`.execute(t.db);
  await sql`insert into fail_batches values (${runId}, ${times})`.execute(t.db);
}

/** The run's scratch rows left: keys and first rows. */
async function scratchOf(runId: number): Promise<{ keys: number; firsts: number }> {
  const { rows } = await sql<{ keys: number; firsts: number }>`
    select (select count(*) from import_run_keys where run_id = ${runId})::int as keys,
           (select count(*) from import_run_firsts where run_id = ${runId})::int as firsts`.execute(t.db);
  return rows[0]!;
}

async function openKiosks(): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from locations l join orgs o on o.id = l.org_id
    where o.name = 'Keyed Kiosks' and l.closed_date is null`.execute(t.db);
  return rows[0]!.n;
}

describe('a location run retried by its job', () => {
  it('resumes with the keys its failed attempt recorded, and closes only what the sheet left out', async () => {
    // The sheet without its last 10 stores; the first attempt fails after committing 5,000 rows,
    // all met unchanged: their keys are all that tells the last step they were in the sheet.
    const runId = await fullRun(ALL.slice(0, STORES - 10));
    await failBatchesOf(runId, 1);
    await enqueueImportRun(producer, runId);
    const done = await waitForRun(t.db, runId, { timeoutMs: 90_000 });
    expect(done).toMatchObject({ status: 'succeeded', counts: { rowsRead: STORES - 10, closed: 10 } });
    expect(await openKiosks()).toBe(STORES - 10);
    const job = await producer.getJob(`import-run-${runId}`);
    expect(job?.attemptsMade).toBe(2);
    expect(await scratchOf(runId)).toEqual({ keys: 0, firsts: 0 });
  }, 120_000);

  it('drops its keys once it is out of attempts; a retry from the dashboard then does nothing', async () => {
    const open = await openKiosks();
    const runId = await fullRun(ALL.slice(0, STORES - 10));
    await failBatchesOf(runId, 3);
    await enqueueImportRun(producer, runId);
    const failed = await waitForRun(t.db, runId, { timeoutMs: 90_000 });
    expect(failed).toMatchObject({ status: 'failed', error: 'connection lost (injected by the test)' });
    const job = (await producer.getJob(`import-run-${runId}`))!;
    await expect.poll(() => job.getState()).toBe('failed');
    expect(await scratchOf(runId)).toEqual({ keys: 0, firsts: 0 });
    expect(await openKiosks()).toBe(open);

    // The dashboard's Retry on the failed job: the run is settled, so the job ends without loading.
    await job.retry('failed');
    await expect.poll(() => job.getState(), { timeout: 30_000 }).toBe('completed');
    expect(await getRun(t.db, runId)).toMatchObject({ status: 'failed', rows_read: 5_000, closed: 0 });
    expect(await scratchOf(runId)).toEqual({ keys: 0, firsts: 0 });
    expect(await openKiosks()).toBe(open);
  }, 120_000);
});

describe('a location run refused at its last step', () => {
  it('drops its keys with the refusal (a --full sheet cut short, over --max-gone)', async () => {
    const open = await openKiosks();
    const runId = await fullRun(ALL.slice(0, 100));
    const refused = runImport({ db: t.db, config: FEED_CONFIG }, runId);
    await expect(refused).rejects.toThrow(/more than --max-gone 10%/);
    expect(await getRun(t.db, runId)).toMatchObject({ status: 'failed', rows_read: 100, closed: 0 });
    expect(await openKiosks()).toBe(open);
    expect(await scratchOf(runId)).toEqual({ keys: 0, firsts: 0 });
  }, 60_000);
});

describe('a location run failed for good while an attempt of it goes on (its job stalled out)', () => {
  // The worker's `failed` handler fails the run of a job that stalled too often; the attempt whose
  // lock lapsed may live on. Failing the run drops its keys, so that attempt must write nothing
  // more: with the keys gone, its last step would close every Location it had met unchanged.
  for (const when of ['after its first batch', 'before its last step'] as const) {
    it(`writes nothing more and closes nothing when failed ${when}`, async () => {
      const open = await openKiosks();
      const runId = await fullRun(ALL.slice(0, STORES - 10), { maxGone: '100' });
      const failAt = when === 'after its first batch' ? 5_000 : STORES - 10;
      const attempt = runImport(
        {
          db: t.db,
          config: FEED_CONFIG,
          // One batch at a time, so the failure lands between two batches (with two in flight the
          // second may commit first; the fence holds either way, the counts just differ).
          batchesInFlight: 1,
          onProgress: async (p) => {
            if (p.status === 'running' && p.rowsRead === failAt) {
              await failRun(t.db, runId, 'job stalled more than allowable limit');
            }
          },
        },
        runId,
      );
      await expect(attempt).rejects.toThrow(`import run ${runId} is no longer running`);
      expect(await getRun(t.db, runId)).toMatchObject({
        status: 'failed',
        error: 'job stalled more than allowable limit',
        rows_read: failAt,
        closed: 0,
      });
      expect(await openKiosks()).toBe(open);
      expect(await scratchOf(runId)).toEqual({ keys: 0, firsts: 0 });
    }, 120_000);
  }
});
