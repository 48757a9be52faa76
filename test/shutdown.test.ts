import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRun } from '../ingest/import-runs/import-runs.repository.js';
import { ensureOrgIndex } from '../search/index-definition.js';
import { pendingChanges } from '../search/index-sync.repository.js';
import { indexExists } from '../search/meili-client.js';
import { syncOutbox } from '../search/org-sync.js';
import { driftCount, verifyIndex } from '../search/verify.js';
import { runCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { meiliEnv, testIndexName, testMeiliClient } from './support/meili.js';
import { testQueuePrefix } from './support/redis.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';
import { until } from './support/wait.js';
import {
  closeCliServices,
  openCliServices,
  QUICK_TAKEOVER,
  type TestQueue,
  WorkerProcesses,
  waitForRun,
} from './support/worker.js';

/**
 * SIGTERM while a worker is inside an import: the worker exits within its shutdown deadline, what
 * is committed is whole batches only (counts and checkpoint agree), and after a restart the same
 * run finishes with the counts of one clean run.
 */
let t: TestDb;
let queue: TestQueue;
let env: Record<string, string>;
let dir: string;
const workers = new WorkerProcesses(() => env);

// SIGTERM aborts the jobs' signals at once: the import hands its job back after the batch it is
// committing, well before the deadline (a job still running at the deadline makes the worker exit 1,
// so the deadline leaves room for a slow commit or an index sync batch on a busy machine). Short
// lock/stall settings let the next worker take the job over at once.
const startWorker = () => workers.start(['--shutdown-timeout', '30000', ...QUICK_TAKEOVER]);

beforeAll(async () => {
  ({ t, queue, env } = await openCliServices());
  dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-sigterm-'));
});

afterAll(async () => {
  await closeCliServices({ t, queue }, workers);
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

    await waitForRun(t.db, runId, (r) => r.checkpoint_rows > 0, { pollMs: 20 });
    expect(await workers.stop(first)).toBe(0);

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
    const done = await waitForRun(t.db, runId, (r) => r.status !== 'running' && r.status !== 'queued', {
      pollMs: 20,
    });
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
    expect(await workers.stop(second)).toBe(0);
  }, 180_000);
});

describe('SIGTERM while the search index is rebuilt', () => {
  it('stops the build within the deadline, drops its index, and loses nothing: the next worker rebuilds', async () => {
    const s = await createTestDb();
    const meili = testMeiliClient();
    const indexUid = testIndexName('sigterm');
    const prefix = testQueuePrefix();
    const addOrgs = (from: number, to: number) =>
      sql`
        insert into orgs (domain_cc, public_slug, name, content_hash)
        select 'gb', 'sigterm-' || g, 'SIGTERM ' || g || ' WIDGETS LTD', 'h' || g
        from generate_series(${from}::int, ${to}::int) g`.execute(s.db);
    const workerEnv = {
      DATABASE_URL: s.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix.prefix,
      SEARCH_REBUILD_BACKLOG: '200',
      SEARCH_REBUILD_DURING_IMPORT: 'on',
      ...meiliEnv(indexUid),
    };
    // A deadline the build has no reason to reach: exit code 0 says every job ended within it.
    const startIndexWorker = () =>
      workers.start(['--queues', 'index', '--shutdown-timeout', '20000'], workerEnv);
    try {
      await addOrgs(1, 100);
      await ensureOrgIndex(meili, indexUid);
      await syncOutbox({ db: s.db, meili, indexUid });
      const liveCreated = (await meili.getRawIndex(indexUid)).createdAt;
      // An import that is writing, and a backlog far past the threshold: the catch-up build follows
      // the import, and would go on following it until the import ends.
      const run = await s.db
        .insertInto('import_runs')
        .values({ feed: 'registrar', source: '/tmp/x.csv', status: 'running' })
        .returning('id')
        .executeTakeFirstOrThrow();
      await addOrgs(101, 1000);

      const first = startIndexWorker();
      let target = '';
      await until(
        async () => {
          const rows = await s.db.selectFrom('search_reindex').select('target').execute();
          target = rows[0]?.target ?? '';
          return target !== '' && (await indexExists(meili, target));
        },
        { timeoutMs: 60_000, what: 'the catch-up build to start' },
      );
      expect(await workers.stop(first)).toBe(0);

      // The half-built index is unregistered and dropped; the live one and the backlog are as they were.
      expect(await s.db.selectFrom('search_reindex').select('target').execute()).toEqual([]);
      await until(async () => !(await indexExists(meili, target)), {
        timeoutMs: 60_000,
        what: 'the build index dropped',
      });
      expect((await meili.getRawIndex(indexUid)).createdAt).toBe(liveCreated);
      expect((await meili.index(indexUid).getStats()).numberOfDocuments).toBe(100);
      expect(await pendingChanges(s.db)).toBe(900);

      // Once the import has ended, the next worker rebuilds from the start.
      await s.db.updateTable('import_runs').set({ status: 'succeeded' }).where('id', '=', run.id).execute();
      const second = startIndexWorker();
      await until(async () => (await pendingChanges(s.db)) === 0, { timeoutMs: 60_000, what: 'the rebuild' });
      expect((await meili.index(indexUid).getStats()).numberOfDocuments).toBe(1000);
      expect(driftCount(await verifyIndex(s.db, meili, indexUid))).toBe(0);
      expect(await workers.stop(second)).toBe(0);
    } finally {
      await prefix.cleanup();
      const { results } = await meili.getIndexes({ limit: 1000 });
      for (const i of results) if (i.uid.startsWith(indexUid)) await meili.deleteIndexIfExists(i.uid);
      await s.drop();
    }
  }, 180_000);
});
