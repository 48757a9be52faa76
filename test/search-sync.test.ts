import { mkdtempSync, writeFileSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Meilisearch } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMeiliServer } from '../bin/local/meili-server.js';
import { createQueue } from '../jobs/queue.js';
import { createWorkerDeps, startWorkers } from '../jobs/worker.js';
import { ensureOrgIndex } from '../search/index-definition.js';
import { pendingChanges } from '../search/index-sync.repository.js';
import { createMeiliClient, INDEXING_TIMEOUT_MS } from '../search/meili-client.js';
import { syncOutbox } from '../search/org-sync.js';
import { driftCount, verifyIndex } from '../search/verify.js';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { createRedis } from '../shared/redis.js';
import { runCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { importFeed } from './support/import.js';
import { meiliEnv, testIndexName, testMeiliClient } from './support/meili.js';
import { testQueuePrefix } from './support/redis.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';
import { searchIndexOnly } from './support/search-index.js';
import { eventually } from './support/wait.js';

const SUFFIX = 'bizdir.test';

function registerFile(rows: [number: string, name: string][]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'bizdir-search-'));
  const file = path.join(dir, 'registrar.csv');
  writeFileSync(file, registrarCsv(rows.map(([n, name]) => registrarFields(n, name))));
  return file;
}

describe('sync through the index queue', () => {
  let t: TestDb;
  const queue = testQueuePrefix();
  const indexUid = testIndexName('sync');
  let meili: Meilisearch;
  let stopWorkers: () => Promise<void>;
  let orgsChanged: (ids: number[]) => Promise<void>;

  beforeAll(async () => {
    t = await createTestDb();
    meili = testMeiliClient();
    const config = loadConfig({
      DATABASE_URL: t.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: queue.prefix,
      LOG_LEVEL: 'silent',
      ...meiliEnv(indexUid),
    });
    const connection = createRedis(TEST_REDIS_URL, 'worker');
    const deps = createWorkerDeps(config, t.db, connection, createLogger(config));
    orgsChanged = deps.orgsChanged;
    const workers = startWorkers(deps, { queues: ['index'] });
    stopWorkers = async () => {
      await workers.close(5_000);
      connection.disconnect();
    };
  });

  afterAll(async () => {
    await stopWorkers?.();
    await queue.cleanup();
    await meili?.deleteIndexIfExists(indexUid);
    await t?.drop();
  });

  const find = (q: string) =>
    searchIndexOnly(t.db, indexUid, q, { limit: 20, domainSuffix: SUFFIX }).catch(() => ({
      ids: [],
      total: -1,
    }));

  it('an import reaches search through an index-orgs job; a rename finds the new name, not the old', async () => {
    await importFeed(
      t.db,
      'registrar',
      registerFile([
        ['00000001', 'ACME WIDGETS LTD'],
        ['00000002', 'BRIDGET JONES LTD'],
      ]),
      { country: 'GB', onBatchCommitted: (ids) => orgsChanged(ids) },
    );
    const found = await eventually(
      () => find('idget'),
      (p) => p.total === 2,
    );
    expect(found.total).toBe(2);

    await importFeed(
      t.db,
      'registrar',
      registerFile([
        ['00000001', 'ZENITH GADGETS LTD'],
        ['00000002', 'BRIDGET JONES LTD'],
      ]),
      { country: 'GB', onBatchCommitted: (ids) => orgsChanged(ids) },
    );
    const renamed = await eventually(
      () => find('zenith'),
      (p) => p.total === 1,
    );
    expect(renamed.total).toBe(1);
    expect((await find('acme')).total).toBe(0);
    expect((await find('idget')).total).toBe(1);
    // The import may commit further statements after the rename; the queue drains them too.
    expect(
      await eventually(
        () => pendingChanges(t.db),
        (n) => n === 0,
      ),
    ).toBe(0);
    expect(driftCount(await verifyIndex(t.db, meili, indexUid))).toBe(0);
  });

  it('a change committed by any writer (here plain SQL) asks for an index run at once, not only at the sweep', async () => {
    const redis = createRedis(TEST_REDIS_URL, 'worker');
    const jobs = createQueue('index', { connection: redis, prefix: queue.prefix });
    try {
      const changeJobs = async () =>
        (await jobs.getJobs(['completed', 'active', 'waiting', 'failed'])).filter(
          (j) => j.data.reason === 'change',
        ).length;
      const before = await changeJobs();
      await t.db
        .updateTable('orgs')
        .set({ name: 'QUIXOTIC BRIDGET JONES LTD' })
        .where('name', '=', 'BRIDGET JONES LTD')
        .execute();
      expect(
        await eventually(
          () => find('quixotic'),
          (p) => p.total === 1,
        ),
      ).toMatchObject({ total: 1 });
      expect(await changeJobs()).toBeGreaterThan(before);
    } finally {
      await jobs.close();
      redis.disconnect();
    }
  });

  it('`bizdir reindex` without --wait queues a rebuild that a worker runs and swaps in', async () => {
    const before = (await meili.getRawIndex(indexUid)).createdAt;
    const env = {
      DATABASE_URL: t.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: queue.prefix,
      ...meiliEnv(indexUid),
    };
    const queued = await runCli(['reindex'], env);
    expect(queued.code).toBe(0);
    expect(queued.stdout).toMatch(/queued search rebuild/);
    // The swap exchanges the indexes' contents under their names, so the live name's creation date
    // becomes the new index's.
    const after = await eventually(
      async () => (await meili.getRawIndex(indexUid)).createdAt,
      (createdAt) => createdAt !== before,
    );
    expect(after).not.toBe(before);
    expect((await find('idget')).total).toBe(1);
    expect(driftCount(await verifyIndex(t.db, meili, indexUid))).toBe(0);
  });
});

describe('Meilisearch down during an import', () => {
  let t: TestDb;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bizdir-meili-down-'));
  const masterKey = 'down-test-master-key';
  const indexUid = 'orgs_down';

  beforeAll(async () => {
    t = await createTestDb();
  });

  afterAll(async () => {
    await t?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('Postgres commits, sync fails without losing anything, and the index catches up to drift 0', async () => {
    // First without LMDB's write map, as releases before it ran; restarted on it (as shipped now)
    // over the same data, which then becomes the sparse memory map.
    let server = await startMeiliServer({
      dataDir,
      masterKey,
      maxIndexingThreads: 1,
      reduceIndexingMemory: false,
    });
    const port = server.port;
    const client = () => createMeiliClient({ url: server.url, apiKey: masterKey }, INDEXING_TIMEOUT_MS);
    await ensureOrgIndex(client(), indexUid);
    await importFeed(t.db, 'registrar', registerFile([['10000001', 'EARLY BIRD LTD']]), { country: 'GB' });
    await syncOutbox({ db: t.db, meili: client(), indexUid });
    await server.stop();
    const indexes = path.join(dataDir, 'data.ms', 'indexes');
    const indexFiles = async () => {
      const files = (await readdir(indexes)).map((uuid) => path.join(indexes, uuid, 'data.mdb'));
      expect(files.length).toBeGreaterThan(0);
      return Promise.all(files.map((file) => stat(file)));
    };
    // Without the write map the file holds what it is (no holes to speak of).
    for (const st of await indexFiles()) expect(st.size).toBeLessThan(2 * st.blocks * 512 + 2 ** 20);

    const rows: [string, string][] = Array.from({ length: 300 }, (_, i) => [
      String(20_000_000 + i),
      `DOWNTIME TRADING ${i} LTD`,
    ]);
    const run = await importFeed(t.db, 'registrar', registerFile(rows), { country: 'GB', batchSize: 100 });
    expect(run.status).toBe('succeeded');
    await expect(syncOutbox({ db: t.db, meili: client(), indexUid })).rejects.toThrow();
    expect(await pendingChanges(t.db)).toBe(300);

    server = await startMeiliServer({
      dataDir,
      masterKey,
      port,
      maxIndexingThreads: 1,
      reduceIndexingMemory: true,
    });
    try {
      const result = await syncOutbox({ db: t.db, meili: client(), indexUid });
      expect(result.indexed).toBe(300);
      expect(await pendingChanges(t.db)).toBe(0);
      const report = await verifyIndex(t.db, client(), indexUid);
      expect(report.orgs).toBe(301);
      expect(driftCount(report)).toBe(0);
    } finally {
      await server.stop();
    }
    // Under the write map an index's file is a sparse file the size of the whole map.
    for (const st of await indexFiles()) expect(st.size).toBeGreaterThan(100 * st.blocks * 512);
  });
});
