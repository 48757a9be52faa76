import { mkdtempSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MeiliServer, startMeiliServer } from '../bin/local/meili-server.js';
import { createWorkerDeps, startWorkers } from '../jobs/worker.js';
import { pendingChanges } from '../search/index-sync.repository.js';
import { createMeiliClient, INDEXING_TIMEOUT_MS } from '../search/meili-client.js';
import { foldName, termMatches } from '../search/name-text.js';
import { registeredReplicas } from '../search/replica-set.repository.js';
import { replicaName } from '../search/replicas.js';
import { driftCount, verifyReplicas } from '../search/verify.js';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { createRedis } from '../shared/redis.js';
import { get, newAccount, startTestApi } from './support/api.js';
import { runCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { importFeed } from './support/import.js';
import { testIndexName } from './support/meili.js';
import { testQueuePrefix } from './support/redis.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';

/**
 * Two real Meilisearch replicas behind one worker and one API (MEILI_URL lists both): one is killed
 * in the middle of an import and of a query load, searches keep answering 200 with exact totals
 * (checked against brute force over Postgres), and once restarted it catches up alone, from its own
 * progress in Postgres, to drift 0, and answers again.
 */

const masterKey = 'replicas-test-master-key';
const indexUid = testIndexName('replicas');
const queue = testQueuePrefix();
const WORDS = ['ACME', 'BRIDGE', 'CEDAR', 'DELTA', 'EMBER', 'FJORD', 'GRANITE', 'HARBOUR'];
const TERMS = ['acme', 'dge', 'ar', 'e', 'delta ember', 'granite 1', 'ltd', 'our 2', 'q', 'absent-term'];
const SORTS = ['name', '-name', 'updated', '-updated', 'relevance'];

const nameOf = (i: number) => `${WORDS[i % 8]} ${WORDS[(i * 7 + 3) % 8]} ${i} LTD`;

function registerFile(from: number, count: number): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'bizdir-replicas-'));
  const file = path.join(dir, 'registrar.csv');
  const rows = Array.from({ length: count }, (_, k) =>
    registrarFields(String(30_000_000 + from + k), nameOf(from + k)),
  );
  writeFileSync(file, registrarCsv(rows));
  return file;
}

async function until(check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('two Meilisearch replicas', () => {
  let t: TestDb;
  let app: FastifyInstance;
  let key: string;
  const dirs: string[] = [];
  const servers: (MeiliServer | undefined)[] = [undefined, undefined];
  const ports: number[] = [];
  let stopWorkers: (() => Promise<void>) | undefined;
  let orgsChanged: (ids: number[]) => Promise<void>;

  const start = async (i: number) => {
    servers[i] = await startMeiliServer({
      dataDir: dirs[i]!,
      masterKey,
      maxIndexingThreads: 1,
      maxIndexingMemory: '256Mb',
      reduceIndexingMemory: true,
      ...(ports[i] ? { port: ports[i] } : {}),
    });
    ports[i] = servers[i]!.port;
  };
  /** Killed as a crash kills it: no shutdown, tasks in flight lost. */
  const kill = async (i: number) => {
    const server = servers[i]!;
    const exited = new Promise((resolve) => server.process.once('exit', resolve));
    server.process.kill('SIGKILL');
    await exited;
    servers[i] = undefined;
  };
  const urls = () => ports.map((p) => `http://127.0.0.1:${p}`);
  const clients = () =>
    urls().map((url) => ({
      label: url,
      meili: createMeiliClient({ url, apiKey: masterKey }, INDEXING_TIMEOUT_MS),
    }));

  /** Totals by brute force over every name in Postgres. */
  const bruteTotal = async (q: string) => {
    const rows = await t.db.selectFrom('orgs').select('name').execute();
    const folded = foldName(q);
    return rows.filter((r) => folded === '' || termMatches(foldName(r.name), folded)).length;
  };

  let asked = 0;
  /** One search through the API: 200, every row holds its term, the total between brute force before and after. */
  const search = async (n: number) => {
    const q = TERMS[n % TERMS.length]!;
    const sort = SORTS[n % SORTS.length]!;
    const offset = [0, 5, 40][n % 3]!;
    const before = await bruteTotal(q);
    const res = await get(
      app,
      `/v1/org/search?q=${encodeURIComponent(q)}&sort=${sort}&offset=${offset}`,
      key,
    );
    const after = await bruteTotal(q);
    asked++;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const body = res.body as { orgs: { total: number; results: { name: string }[] } };
    const what = `q=${q} sort=${sort} offset=${offset}`;
    expect(body.orgs.total, what).toBeGreaterThanOrEqual(before);
    expect(body.orgs.total, what).toBeLessThanOrEqual(after);
    for (const org of body.orgs.results) expect(termMatches(foldName(org.name), foldName(q))).toBe(true);
    expect(body.orgs.results.length).toBe(Math.max(0, Math.min(20, body.orgs.total - offset)));
  };
  /** Searches from `clients` loops until `stop` resolves; the first failure fails the load. */
  const load = (clientsAtOnce: number) => {
    let stopped = false;
    const loops = Array.from({ length: clientsAtOnce }, async (_, c) => {
      for (let n = c; !stopped; n += clientsAtOnce) await search(n);
    });
    return {
      async stop() {
        stopped = true;
        await Promise.all(loops);
      },
    };
  };

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) dirs.push(mkdtempSync(path.join(tmpdir(), `bizdir-replica-${i}-`)));
    await start(0);
    await start(1);
    t = await createTestDb();
    const env = {
      MEILI_URL: urls().join(','),
      MEILI_MASTER_KEY: masterKey,
      MEILI_INDEX: indexUid,
    };
    const config = loadConfig({
      DATABASE_URL: t.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: queue.prefix,
      LOG_LEVEL: 'silent',
      // Small, so that the replica back from its outage catches up by a rebuild of its own.
      SEARCH_REBUILD_BACKLOG: '1000',
      ...env,
    });
    const connection = createRedis(TEST_REDIS_URL, 'worker');
    const deps = createWorkerDeps(config, t.db, connection, createLogger(config));
    orgsChanged = deps.orgsChanged;
    const workers = startWorkers(deps, { queues: ['index'] });
    stopWorkers = async () => {
      await workers.close(5_000);
      connection.disconnect();
    };
    app = await startTestApi({ databaseUrl: t.url, prefix: queue.prefix, meiliIndex: indexUid, env });
    key = (await newAccount(t.db, 1_000_000)).api_key;
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await stopWorkers?.();
    await queue.cleanup();
    for (const server of servers) await server?.stop();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    await t?.drop();
  });

  const [a, b] = [0, 1];
  const replicaOf = (i: number) => replicaName(urls()[i]!);

  it('keeps answering exactly with one replica killed mid-import, and the replica catches up alone', async () => {
    // A first import, in both replicas.
    await importFeed(t.db, 'registrar', registerFile(0, 600), {
      country: 'GB',
      batchSize: 100,
      onBatchCommitted: (ids) => orgsChanged(ids),
    });
    await until(async () => (await pendingChanges(t.db)) === 0);
    expect(await registeredReplicas(t.db)).toEqual([replicaOf(a), replicaOf(b)].sort());

    // Under a query load, more imports (each small enough for the fresh merge: a register import
    // merges its run at the end, in one piece); replica b is killed in the middle of the second.
    const running = load(3);
    for (let k = 0; k < 6; k++) {
      const run = await importFeed(t.db, 'registrar', registerFile(600 + k * 250, 250), {
        country: 'GB',
        batchSize: 100,
        onBatchCommitted: async (ids) => {
          if (k === 1 && servers[b]) await kill(b);
          await orgsChanged(ids);
        },
      });
      expect(run.status).toBe('succeeded');
      await until(async () => (await pendingChanges(t.db, replicaOf(a))) < 400);
    }
    await until(async () => (await pendingChanges(t.db, replicaOf(a))) === 0);
    const during = asked;
    // Replica a is in step, b is behind by the rest of the import.
    expect(await pendingChanges(t.db, replicaOf(b))).toBeGreaterThan(1_000);
    for (let n = 0; n < 30; n++) await search(n);

    // b comes back on its data: it catches up alone (a rebuild of its own, its backlog being large).
    await start(b);
    await until(async () => (await pendingChanges(t.db, replicaOf(b))) === 0);
    await until(async () => (await pendingChanges(t.db)) === 0);
    await running.stop();
    expect(asked - during).toBeGreaterThan(0);
    expect(during).toBeGreaterThan(0);
    for (const { replica, report } of await verifyReplicas(t.db, clients(), indexUid)) {
      expect(report.orgs, replica).toBe(2_100);
      expect(driftCount(report), replica).toBe(0);
    }

    // b is used again: with a killed now, every search is b's, and exact.
    await kill(a);
    for (let n = 0; n < 30; n++) await search(n);
    await start(a);
  }, 600_000);

  it('bizdir reindex rebuilds each replica in turn while searches keep answering; --verify reports each', async () => {
    const env = {
      DATABASE_URL: t.url,
      MEILI_URL: urls().join(','),
      MEILI_MASTER_KEY: masterKey,
      MEILI_INDEX: indexUid,
    };
    const running = load(2);
    const rebuilt = await runCli(['reindex', '--wait', '--json'], env, 300_000);
    await running.stop();
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    const built = JSON.parse(rebuilt.stdout) as { replicas: { replica: string; documents: number }[] };
    expect(built.replicas.map((r) => [r.replica, r.documents])).toEqual(urls().map((u) => [u, 2_100]));

    const verified = await runCli(['reindex', '--verify', '--json'], env);
    expect(verified.code, verified.stderr).toBe(0);
    const report = JSON.parse(verified.stdout) as {
      drift: number;
      replicas: { replica: string; drift: number }[];
    };
    expect(report.drift).toBe(0);
    expect(report.replicas.map((r) => [r.replica, r.drift])).toEqual(urls().map((u) => [u, 0]));

    // Drift on one replica is reported as that replica's, and the command exits 1.
    await createMeiliClient({ url: urls()[b]!, apiKey: masterKey }, INDEXING_TIMEOUT_MS)
      .index(indexUid)
      .deleteAllDocuments()
      .waitTask();
    const drifted = await runCli(['reindex', '--verify'], env);
    expect(drifted.code).toBe(1);
    expect(drifted.stdout).toContain(`replica ${urls()[a]}: drift 0`);
    expect(drifted.stdout).toContain(`replica ${urls()[b]}: drift 2100`);
  }, 600_000);
});
