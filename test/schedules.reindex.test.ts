import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import type { Meilisearch } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueue } from '../jobs/queue.js';
import { allocatedBytes } from '../jobs/schedules/index-growth.js';
import { getReindexRun } from '../jobs/schedules/reindex-runs.repository.js';
import { reindexJobId, runScheduleProcessor } from '../jobs/schedules/run-schedule.processor.js';
import { upsertSchedule } from '../jobs/schedules/schedule.repository.js';
import type { RunScheduleOutcome } from '../jobs/schedules/scheduler.js';
import { createWorkerDeps, type RunningWorkers, startWorkers } from '../jobs/worker.js';
import { succeeded } from '../search/meili-client.js';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { createRedis } from '../shared/redis.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { meiliEnv, testIndexName, testMeiliClient } from './support/meili.js';
import { testQueuePrefix } from './support/redis.js';
import { scheduleFiring } from './support/schedules.js';
import { buildTestIndex } from './support/search-index.js';
import { eventually } from './support/wait.js';

/**
 * Reindex schedules through the real processors: a firing queues the rebuild `bizdir reindex`
 * queues and records its end; a rebuild under way is not doubled; `--verify` compares and reports;
 * `--when-grown` measures the index's files (here a stand-in folder as MEILI_DB_PATH, since the test
 * Meilisearch is shared by every test file) against their size right after the last build.
 */
const ORGS = 50;
let t: TestDb;
let meili: Meilisearch;
const indexUid = testIndexName('sched_reindex');
const queue = testQueuePrefix();
const redis = createRedis(TEST_REDIS_URL, 'worker');
const dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-sched-reindex-'));
const dbPath = path.join(dir, 'data.ms');
const indexFile = path.join(dbPath, 'indexes', 'a', 'data.mdb');
let running: RunningWorkers | undefined;
let fire: ReturnType<typeof runScheduleProcessor>;
let fireBlind: ReturnType<typeof runScheduleProcessor>;

const configFor = (extra: Record<string, string>) =>
  loadConfig({
    DATABASE_URL: t.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: queue.prefix,
    LOG_LEVEL: 'silent',
    DATA_DIR: dir,
    ...meiliEnv(indexUid),
    ...extra,
  });

beforeAll(async () => {
  t = await createTestDb();
  meili = testMeiliClient();
  await sql`
    insert into orgs (domain_cc, public_slug, name, content_hash)
    select 'gb', 'sched-reindex-' || g, 'SCHEDULED ' || g || ' LTD', 'h' || g
    from generate_series(1, ${ORGS}) g`.execute(t.db);
  await buildTestIndex(t.db, meili, indexUid);
  mkdirSync(path.dirname(indexFile), { recursive: true });
  writeFileSync(indexFile, randomBytes(1 << 20));
  const config = configFor({ MEILI_DB_PATH: dbPath });
  const deps = createWorkerDeps(config, t.db, redis, createLogger(config));
  fire = runScheduleProcessor(deps);
  // A worker that cannot see Meilisearch's files: no MEILI_DB_PATH, no embedded one under DATA_DIR.
  const blind = configFor({});
  fireBlind = runScheduleProcessor(createWorkerDeps(blind, t.db, redis, createLogger(blind)));
  running = startWorkers(deps, { queues: ['import', 'index'] });
}, 60_000);

afterAll(async () => {
  await running?.close(5_000);
  redis.disconnect();
  await queue.cleanup();
  await meili?.deleteIndexIfExists(indexUid);
  await t?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function schedule(name: string, job: 'reindex' | 'reindex-verify', whenGrown: number | null = null) {
  await upsertSchedule(t.db, { name, job, cron: '0 4 * * 0', tz: 'UTC', whenGrown });
}

/** One firing, as BullMQ hands it to the processor (its last attempt). */
const fireAt = async (name: string, slot: string, processor = fire) =>
  (await processor(scheduleFiring(name, slot), undefined, undefined)) as RunScheduleOutcome;

async function settledRun(id: number) {
  const settled = (run: Awaited<ReturnType<typeof getReindexRun>>) =>
    run !== undefined && ['succeeded', 'failed', 'skipped'].includes(run.status);
  const run = await eventually(() => getReindexRun(t.db, id), settled, { timeoutMs: 90_000 });
  if (!settled(run)) throw new Error(`reindex run ${id} did not settle: ${JSON.stringify(run)}`);
  return run!;
}

const runIdOf = (o: RunScheduleOutcome) => (o as { runId: number }).runId;
const builds = () => t.db.selectFrom('index_build_sizes').selectAll().orderBy('id').execute();

describe('a reindex schedule', () => {
  it('queues the rebuild bizdir reindex queues, records how it ended and the size after it', async () => {
    await schedule('weekly', 'reindex');
    const slot = '2026-12-06T04:00:00Z';
    const fired = await fireAt('weekly', slot);
    expect(fired).toMatchObject({ outcome: 'queued', jobId: reindexJobId(runIdOf(fired)) });
    const job = await createQueue('index', { connection: redis, prefix: queue.prefix }).getJob(
      reindexJobId(runIdOf(fired)),
    );
    expect(job?.name).toBe('index-orgs');
    expect(job?.data).toEqual({ reason: 'schedule', rebuild: true, scheduleRun: runIdOf(fired) });

    const run = await settledRun(runIdOf(fired));
    expect(run).toMatchObject({ status: 'succeeded', job: 'reindex', schedule_name: 'weekly' });
    expect(run.reason).toMatch(new RegExp(`^rebuilt: ${ORGS} Orgs`));
    expect(run.started_at).toBeInstanceOf(Date);
    expect((await meili.index(indexUid).getStats()).numberOfDocuments).toBe(ORGS);
    const { results } = await meili.getIndexes({ limit: 1000 });
    expect(results.filter((i) => i.uid.startsWith(`${indexUid}__`))).toEqual([]);
    expect(await builds()).toMatchObject([
      { index_uid: indexUid, documents: ORGS, bytes: await allocatedBytes(dbPath) },
    ]);

    // The same slot again (a second worker, a retried firing): no second rebuild.
    expect((await fireAt('weekly', slot)).outcome).toBe('duplicate');
  }, 120_000);

  it('is skipped while a rebuild is already queued or building, not stopped by an old registration', async () => {
    await schedule('one-at-a-time', 'reindex');
    const index = createQueue('index', { connection: redis, prefix: queue.prefix });
    const waiting = await index.add('index-orgs', { reason: 'reindex', rebuild: true }, { delay: 60_000 });
    const queued = await fireAt('one-at-a-time', '2026-12-06T05:00:00Z');
    await waiting.remove();
    expect(queued).toMatchObject({
      outcome: 'skipped',
      reason: `a rebuild is already under way (rebuild job ${waiting.id} is delayed)`,
    });

    await t.db
      .insertInto('search_reindex')
      .values({ target: `${indexUid}__build_other` })
      .execute();
    const building = await fireAt('one-at-a-time', '2026-12-06T06:00:00Z');
    expect(building).toMatchObject({
      outcome: 'skipped',
      reason: `a rebuild is already under way (index ${indexUid}__build_other is being built)`,
    });
    // Left by a process that died hours ago: the next rebuild clears it.
    await t.db
      .updateTable('search_reindex')
      .set({ started_at: new Date(Date.now() - 7 * 3600_000) })
      .execute();
    const after = await fireAt('one-at-a-time', '2026-12-06T07:00:00Z');
    expect(after.outcome).toBe('queued');
    expect((await settledRun(runIdOf(after))).status).toBe('succeeded');
    expect(await t.db.selectFrom('search_reindex').selectAll().execute()).toEqual([]);
  }, 120_000);

  it('with --verify compares the index with Postgres: no drift succeeds, drift fails the run', async () => {
    await schedule('check', 'reindex-verify');
    const clean = await fireAt('check', '2026-12-07T04:00:00Z');
    expect(clean).toMatchObject({
      outcome: 'succeeded',
      reason: `no drift: ${ORGS} Orgs, ${ORGS} documents`,
    });
    const org = await t.db.selectFrom('orgs').select('id').orderBy('id').limit(1).executeTakeFirstOrThrow();
    await succeeded(meili.index(indexUid).deleteDocument(org.id));
    const drift = await fireAt('check', '2026-12-08T04:00:00Z');
    expect(drift.outcome).toBe('failed');
    const run = await getReindexRun(t.db, runIdOf(drift));
    expect(run).toMatchObject({
      status: 'failed',
      result: { orgs: ORGS, documents: ORGS - 1, missing: 1, extra: 0, stale: 0 },
    });
    expect(run?.reason).toMatch(/^search index drift: 1 missing, 0 extra, 0 stale/);
  }, 60_000);

  it('with --when-grown rebuilds only once the index files grew past the multiple per Org', async () => {
    await schedule('grown', 'reindex', 1.3);
    // A build (which also puts back the document the test above took out), then nothing grows: 1.00×.
    expect((await settledRun(runIdOf(await fireAt('weekly', '2026-12-09T03:00:00Z')))).status).toBe(
      'succeeded',
    );
    const same = await fireAt('grown', '2026-12-09T04:00:00Z');
    expect(same).toMatchObject({
      outcome: 'skipped',
      reason: 'the index is at 1.00× its size per Org after the last build; rebuilt from 1.30×',
    });
    writeFileSync(indexFile, randomBytes(1.5 * (1 << 20)));
    const grown = await fireAt('grown', '2026-12-10T04:00:00Z');
    expect(grown.outcome).toBe('queued');
    const run = await settledRun(runIdOf(grown));
    expect(run.status).toBe('succeeded');
    expect(run.reason).toMatch(/^rebuilt: /);
    expect((await builds()).at(-1)).toMatchObject({ bytes: await allocatedBytes(dbPath), documents: ORGS });

    // No size recorded after a build (one before this release): rebuild once to have one.
    await t.db.deleteFrom('index_build_sizes').execute();
    const first = await fireAt('grown', '2026-12-11T04:00:00Z');
    expect(first.outcome).toBe('queued');
    expect((await getReindexRun(t.db, runIdOf(first)))?.reason).toBe(
      'no size recorded after a build yet: rebuilding to have one',
    );
    expect((await settledRun(runIdOf(first))).status).toBe('succeeded');

    // A worker that cannot see the files fails the run and says what to set.
    const blind = await fireAt('grown', '2026-12-12T04:00:00Z', fireBlind);
    expect(blind).toMatchObject({
      outcome: 'failed',
      error:
        '--when-grown: cannot measure the index: cannot see the Meilisearch database folder (set MEILI_DB_PATH to its --db-path)',
    });
  }, 180_000);
});
