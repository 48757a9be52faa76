import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueue } from '../jobs/queue.js';
import { createWorkerDeps, startWorkers } from '../jobs/worker.js';
import { ensureOrgIndex } from '../search/index-definition.js';
import { loadConfig } from '../shared/config.js';
import { createDb } from '../shared/db.js';
import { createLogger } from '../shared/logger.js';
import { reportPgOutages, reportRedisOutages } from '../shared/outage.js';
import { createRedis } from '../shared/redis.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { meiliEnv, testIndexName, testMeiliClient } from './support/meili.js';
import { testQueuePrefix } from './support/redis.js';
import { freePort, hostPort, TcpProxy, withPort } from './support/tcp-proxy.js';
import { eventually, sleep } from './support/wait.js';

/**
 * Real lost connections, logged through shared/outage.ts: a private redis-server that is killed and
 * started again, a Postgres and a Meilisearch behind a proxy that is cut and restored. Each outage
 * is one warning and one "recovered after N s" line, however many errors came in between.
 */

interface LogLine {
  level: number;
  msg: string;
  service?: string;
  err?: string;
  errors?: number;
  down_ms?: number;
}

function capture(level: 'info' | 'debug' = 'info') {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  const logger = createLogger(loadConfig({ LOG_LEVEL: level }), {}, sink);
  const count = (pattern: RegExp, lvl?: number) =>
    lines.filter((l) => pattern.test(l.msg) && (lvl === undefined || l.level === lvl)).length;
  return { lines, logger, count };
}

/** A redis-server of this test's own, started and killed at will. */
class PrivateRedis {
  private child: ChildProcess | null = null;
  constructor(readonly port: number) {}

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
      ],
      { stdio: 'ignore' },
    );
    this.child = child;
    const up = await eventually(
      () =>
        new Promise<boolean>((resolve) => {
          const s = net.connect(this.port, '127.0.0.1');
          s.once('connect', () => {
            s.destroy();
            resolve(true);
          });
          s.once('error', () => resolve(false));
        }),
      { timeoutMs: 10_000 },
    );
    if (!up) throw new Error(`redis-server did not start on port ${this.port}`);
  }

  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

describe('outages of real connections are logged once, with their recovery', { timeout: 60_000 }, () => {
  it('Redis: a worker connection and its queue, while the server is killed and started again', async () => {
    const server = new PrivateRedis(await freePort());
    await server.start();
    const { lines, logger, count } = capture();
    const connection = createRedis(server.url, 'worker', { retryStrategy: () => 100 });
    reportRedisOutages(logger, connection);
    const queue = createQueue('index', { connection, prefix: 'bizdir-test-outage' });
    try {
      await queue.getJobCounts();
      expect(lines).toEqual([]);
      await server.kill();
      // ioredis retries every 100 ms: a dozen failed attempts or more while the server is away.
      expect(await eventually(() => count(/^Redis connection lost; retrying$/) === 1)).toBe(true);
      await sleep(1_500);
      expect(count(/^Redis connection lost/)).toBe(1);
      expect(count(/recovered/)).toBe(0);
      await server.start();
      // The queue's command, queued while Redis was away (a worker connection waits), goes through.
      await queue.getJobCounts();
      expect(await eventually(() => count(/^Redis connection recovered after \d+\.\d s$/) === 1)).toBe(true);
      const lost = lines.find((l) => /lost/.test(l.msg))!;
      expect(lost).toMatchObject({ level: 40, service: 'Redis' });
      expect(lost.err).toMatch(/ECONNREFUSED|ECONNRESET|Connection is closed/);
      const recovered = lines.find((l) => /recovered/.test(l.msg))!;
      expect(recovered).toMatchObject({ level: 30, service: 'Redis' });
      expect(recovered.errors).toBeGreaterThan(3);
      expect(recovered.down_ms).toBeGreaterThanOrEqual(1_500);
      expect(lines).toHaveLength(2);
    } finally {
      // After a failed assertion Redis may be down here; that failure is the one reported.
      await queue.close().catch(() => undefined);
      connection.disconnect();
      await server.kill();
    }
  });

  describe('Postgres', () => {
    let t: TestDb;
    beforeAll(async () => {
      t = await createTestDb();
    });
    afterAll(async () => {
      await t?.drop();
    });

    it('a pool whose connections drop: one warning, failed queries in between unlogged, one recovery', async () => {
      const target = hostPort(t.url, 5432);
      const proxy = new TcpProxy(target.host, target.port);
      await proxy.start();
      const { lines, logger, count } = capture();
      const handle = createDb(withPort(t.url, proxy.port), { max: 3, connectionTimeoutMillis: 1_000 });
      reportPgOutages(logger, handle.pool);
      try {
        await Promise.all([1, 2, 3].map(() => handle.pool.query('select pg_sleep(0.05)')));
        await proxy.cut();
        for (let i = 0; i < 5; i++) await expect(handle.pool.query('select 1')).rejects.toThrow();
        expect(count(/^Postgres connection lost; retrying$/, 40)).toBe(1);
        await proxy.start();
        expect((await handle.pool.query('select 1 as one')).rows[0].one).toBe(1);
        expect(count(/^Postgres connection recovered after \d+\.\d s$/, 30)).toBe(1);
        expect(lines).toHaveLength(2);
      } finally {
        await handle.close();
        await proxy.cut();
      }
    });

    it.each([
      ['Kysely', (h: ReturnType<typeof createDb>) => h.db.selectFrom('orgs').select('id').execute()],
      ['pool.query', (h: ReturnType<typeof createDb>) => h.pool.query('select id from orgs')],
    ] as const)(
      'a pool that cannot connect at all (no connection to lose), through %s: the same',
      async (_via, query) => {
        const target = hostPort(t.url, 5432);
        const proxy = new TcpProxy(target.host, target.port);
        await proxy.start();
        const port = proxy.port;
        await proxy.cut(); // nothing listens there now
        const { lines, logger, count } = capture();
        const handle = createDb(withPort(t.url, port), { max: 2, connectionTimeoutMillis: 1_000 });
        reportPgOutages(logger, handle.pool);
        try {
          for (let i = 0; i < 4; i++) {
            await expect(query(handle)).rejects.toThrow();
          }
          expect(count(/^Postgres connection lost; retrying$/, 40)).toBe(1);
          expect(lines[0]?.err).toMatch(/ECONNREFUSED/);
          await proxy.start();
          await query(handle);
          expect(count(/^Postgres connection recovered after \d+\.\d s$/, 30)).toBe(1);
          expect(lines).toHaveLength(2);
        } finally {
          await handle.close();
          await proxy.cut();
        }
      },
    );

    it('the worker’s index sweep while Meilisearch is away: one warning, failed sweeps at debug, one recovery', async () => {
      const indexUid = testIndexName('outage_sweep');
      await ensureOrgIndex(testMeiliClient(), indexUid);
      const env = meiliEnv(indexUid);
      const target = hostPort(env.MEILI_URL!, 7700);
      const proxy = new TcpProxy(target.host, target.port);
      await proxy.start();
      const queue = testQueuePrefix();
      const config = loadConfig({
        DATABASE_URL: t.url,
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX: queue.prefix,
        ...env,
        MEILI_URL: withPort(env.MEILI_URL!, proxy.port),
      });
      const { logger, count } = capture('debug');
      const connection = createRedis(TEST_REDIS_URL, 'worker');
      const workers = startWorkers(createWorkerDeps(config, t.db, connection, logger), { queues: ['index'] });
      const sweeps = () => count(/^job completed$/, 20);
      const failedSweeps = () => count(/^job failed$/, 20);
      try {
        expect(await eventually(() => sweeps() >= 1)).toBe(true);
        await proxy.cut();
        expect(await eventually(() => failedSweeps() >= 3)).toBe(true);
        expect(count(/^Meilisearch connection lost; retrying$/, 40)).toBe(1);
        expect(count(/^job failed$/, 40)).toBe(0); // not one warning per failed sweep
        expect(count(/^job completed$/, 30)).toBe(0); // sweeps that found nothing: debug, not info
        const before = sweeps();
        await proxy.start();
        expect(await eventually(() => sweeps() > before)).toBe(true);
        expect(
          await eventually(() => count(/^Meilisearch connection recovered after \d+\.\d s$/, 30) === 1),
        ).toBe(true);
        expect(count(/connection lost/)).toBe(1);
      } finally {
        await workers.close(5_000);
        connection.disconnect();
        await proxy.cut();
        await queue.cleanup();
        await testMeiliClient().deleteIndexIfExists(indexUid);
      }
    });
  });
});
