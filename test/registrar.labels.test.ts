import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRun, type ImportRun } from '../ingest/import-runs/import-runs.repository.js';
import { createImportRun } from '../ingest/import-runs/import-runs.state.js';
import type { RunImportDeps } from '../ingest/run/deps.js';
import { runImport } from '../ingest/run/run-import.js';
import type { Db } from '../shared/db.js';
import { clashingRegister } from './support/clashing-register.js';
import { runCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { FEED_CONFIG } from './support/import.js';
import { testQueuePrefix } from './support/redis.js';
import { until } from './support/wait.js';
import { type TestQueue, WorkerProcesses, waitForRun } from './support/worker.js';

/**
 * The same register file gives the same public domains (docs/decisions.md, Public labels): whatever the
 * batch size, the merge's chunks and lanes, the number of workers, and after a chunk that failed or a
 * worker killed with SIGKILL mid-merge, every company gets the label the rule gives.
 */
const dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-labels-'));
const dbs: TestDb[] = [];
const fresh = async () => {
  const t = await createTestDb();
  dbs.push(t);
  return t;
};
afterAll(async () => {
  for (const t of dbs) await t.drop();
});

async function labelsOf(db: Db): Promise<Map<string, string>> {
  const { rows } = await sql<{ number: string; slug: string }>`
    select registration_number as number, public_slug as slug from orgs order by registration_number`.execute(
    db,
  );
  return new Map(rows.map((r) => [r.number, r.slug]));
}

async function runParts(db: Db, files: string[], deps: Partial<RunImportDeps>): Promise<ImportRun> {
  const created = await createImportRun(db, {
    feed: 'registrar',
    parts: files.map((source) => ({ source, entry: null })),
    options: { country: 'GB', full: false },
  });
  return runImport({ db, config: FEED_CONFIG, ...deps }, created.id);
}

describe('public labels of a register run', () => {
  const { files, expected } = clashingRegister(dir, 'in-process', 3, 150);

  it('follow the bases and rows, not the batches, chunks or lanes', async () => {
    const configs: Partial<RunImportDeps>[] = [
      { batchSize: 5000, mergeLanes: 1, mergeChunk: 1000 },
      { batchSize: 7, mergeLanes: 3, mergeChunk: 5 },
      { batchSize: 64, mergeLanes: 2, mergeChunk: 17 },
    ];
    for (const deps of configs) {
      const t = await fresh();
      const done = await runParts(t.db, files, deps);
      expect(done.status).toBe('succeeded');
      expect(done.inserted).toBe(expected.size);
      expect(await labelsOf(t.db)).toEqual(expected);
    }
  }, 120_000);

  it('are the same after a chunk fails mid-merge and the run resumes', async () => {
    const t = await fresh();
    // One company's Org cannot be written once: the chunk rolls back with the chunks after it.
    const victim = [...expected.keys()].sort()[Math.floor(expected.size / 2)]!;
    await sql`create table fail_flag (done boolean)`.execute(t.db);
    await sql`
      create function fail_once() returns trigger language plpgsql as $$
      begin
        if new.registration_number = ${sql.lit(victim)} and not exists (select 1 from fail_flag) then
          raise exception 'disk on fire';
        end if;
        return new;
      end $$`.execute(t.db);
    await sql`create trigger fail_once before insert on orgs for each row execute function fail_once()`.execute(
      t.db,
    );
    const created = await createImportRun(t.db, {
      feed: 'registrar',
      parts: files.map((source) => ({ source, entry: null })),
      options: { country: 'GB', full: false },
    });
    await expect(
      runImport({ db: t.db, config: FEED_CONFIG, batchSize: 11, mergeLanes: 3, mergeChunk: 6 }, created.id),
    ).rejects.toThrow(/disk on fire/);
    const half = (await getRun(t.db, created.id))!;
    expect(half.status).toBe('running');
    expect(Number(half.merged_rows)).toBeGreaterThan(0);
    await sql`insert into fail_flag values (true)`.execute(t.db);
    const done = await runImport({ db: t.db, config: FEED_CONFIG, mergeLanes: 2, mergeChunk: 4 }, created.id);
    expect(done.status).toBe('succeeded');
    expect(await labelsOf(t.db)).toEqual(expected);
  }, 120_000);
});

describe('public labels of a register run through the queue', () => {
  let queue: TestQueue;
  let env: Record<string, string> = {};
  const workers = new WorkerProcesses(() => env);
  beforeAll(() => {
    queue = testQueuePrefix();
  });
  afterAll(async () => {
    await workers.stopAll();
    await queue?.cleanup();
  });

  it('are the same with two workers and a worker killed (SIGKILL) mid-merge', async () => {
    // Enough companies for several merge chunks of the feed's own size (registrar.feed.ts MERGE_CHUNK).
    const { files, expected } = clashingRegister(dir, 'queued', 3, 4000);
    const t = await fresh();
    env = { DATABASE_URL: t.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: queue.prefix };
    // The merge is held on one company of a later chunk until the workers are killed, so the kill
    // lands mid-merge however fast the machine is (chunks commit in key order: those before it are in).
    const held = [...expected.keys()].sort()[Math.floor((expected.size * 3) / 4)]!;
    await sql`create table hold_released (done boolean)`.execute(t.db);
    await sql`
      create function hold_once() returns trigger language plpgsql as $$
      begin
        if new.registration_number = ${sql.lit(held)} and not exists (select 1 from hold_released) then
          perform pg_sleep(600);
        end if;
        return new;
      end $$`.execute(t.db);
    await sql`create trigger hold_once before insert on orgs for each row execute function hold_once()`.execute(
      t.db,
    );
    const victim = workers.start();
    const helper = workers.start();
    const queued = await runCli(['import', 'registrar', ...files], env);
    expect(queued.code).toBe(0);
    const id = Number(/import run (\d+)/.exec(queued.stdout)![1]);
    await waitForRun(t.db, id, (r) => Number(r.merged_rows) > 0, { timeoutMs: 300_000 });
    await until(
      async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event = 'PgSleep'`.execute(t.db);
        return rows[0]!.n > 0;
      },
      { timeoutMs: 300_000, what: 'the merge to reach the held company' },
    );
    // The merge runs on one of the two; kill both (SIGKILL), end the held transaction, and let a
    // third worker finish the run.
    await workers.stop(victim, 'SIGKILL');
    await workers.stop(helper, 'SIGKILL');
    await sql`insert into hold_released values (true)`.execute(t.db);
    await sql`select pg_terminate_backend(pid) from pg_stat_activity
      where datname = current_database() and wait_event = 'PgSleep'`.execute(t.db);
    const atKill = (await getRun(t.db, id))!;
    expect(atKill.status).toBe('running');
    expect(Number(atKill.merged_rows)).toBeGreaterThan(0);
    expect(Number(atKill.merged_rows)).toBeLessThan(expected.size);
    const rescuer = workers.start();
    const done = await waitForRun(t.db, id, (r) => r.status !== 'running' && r.status !== 'queued', {
      timeoutMs: 300_000,
    });
    await workers.stop(rescuer);
    expect(done.status).toBe('succeeded');
    expect(await labelsOf(t.db)).toEqual(expected);
  }, 720_000);
});
