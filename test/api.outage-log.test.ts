import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../api/app.js';
import { ensureOrgIndex } from '../search/index-definition.js';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { get, importOneOrg, newAccount } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { meiliEnv, testIndexName, testMeiliClient } from './support/meili.js';
import { testQueuePrefix } from './support/redis.js';
import { hostPort, TcpProxy, withPort } from './support/tcp-proxy.js';
import { eventually } from './support/wait.js';

/** Lost connections: logged once per outage, with the recovery, not once per request. */

describe('outage logging', () => {
  let t: TestDb;
  let orgPath: string;
  let key: string;
  const redisNs = testQueuePrefix();
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  const count = (pattern: RegExp) => lines.filter((l) => pattern.test(l.msg)).length;

  beforeAll(async () => {
    t = await createTestDb();
    orgPath = `/v1/org/${await importOneOrg(t.db)}`;
    key = (await newAccount(t.db, 1000)).api_key;
  });
  afterAll(async () => {
    await t?.drop();
    await redisNs.cleanup();
  });

  async function appVia(databaseUrl: string, redisUrl: string, meili: Record<string, string> = {}) {
    const config = loadConfig({
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: redisNs.prefix,
      LOG_LEVEL: 'info',
      ...meiliEnv(testIndexName('outage')),
      ...meili,
    });
    const app = await buildApp({ config, logger: createLogger(config, {}, sink) });
    await app.ready();
    return app;
  }

  it('Redis: one warning when lost, one line when back, however many requests failed between', async () => {
    const target = hostPort(TEST_REDIS_URL, 6379);
    const proxy = new TcpProxy(target.host, target.port);
    await proxy.start();
    const app = await appVia(t.url, withPort(TEST_REDIS_URL, proxy.port));
    lines.length = 0;
    try {
      expect((await get(app, orgPath, key)).status).toBe(200);
      await proxy.cut();
      for (let i = 0; i < 8; i++) expect((await get(app, orgPath, key)).status).toBe(503);
      // An orchestrator probing readiness meanwhile: 503s, and no line per probe either.
      for (let i = 0; i < 3; i++) {
        expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
      }
      expect(count(/^not ready$/)).toBe(0);
      await proxy.start();
      expect(await eventually(async () => (await get(app, orgPath, key)).status === 200)).toBe(true);
      expect(count(/^Redis connection lost/)).toBe(1);
      expect(count(/^Redis connection recovered after \d+\.\d s$/)).toBe(1);
      expect(count(/^request failed$/)).toBe(0);
      expect(lines.find((l) => /^Redis connection lost/.test(l.msg))?.level).toBe(40);
    } finally {
      await app.close();
      await proxy.cut();
    }
  });

  it('Postgres: the same, for the pool and the record cache', async () => {
    const target = hostPort(t.url, 5432);
    const proxy = new TcpProxy(target.host, target.port);
    await proxy.start();
    const app = await appVia(withPort(t.url, proxy.port), TEST_REDIS_URL);
    const fresh = (await newAccount(t.db)).api_key;
    lines.length = 0;
    try {
      expect((await get(app, orgPath, key)).status).toBe(200);
      await proxy.cut();
      for (let i = 0; i < 6; i++) expect((await get(app, orgPath, fresh)).status).toBe(503);
      await proxy.start();
      expect(await eventually(async () => (await get(app, orgPath, fresh)).status === 200)).toBe(true);
      expect(await eventually(async () => count(/^record cache: listening for changes again/) === 1)).toBe(
        true,
      );
      expect(count(/^Postgres connection lost/)).toBe(1);
      expect(count(/^Postgres connection recovered after \d+\.\d s$/)).toBe(1);
      expect(count(/^record cache: lost/)).toBe(1);
      expect(count(/^request failed$/)).toBe(0);
    } finally {
      await app.close();
      await proxy.cut();
    }
  });

  it('Meilisearch: the same for search', async () => {
    const index = testIndexName('outage');
    await ensureOrgIndex(testMeiliClient(), index);
    const env = meiliEnv(index);
    const target = hostPort(env.MEILI_URL!, 7700);
    const proxy = new TcpProxy(target.host, target.port);
    await proxy.start();
    const app = await appVia(t.url, TEST_REDIS_URL, {
      ...env,
      MEILI_URL: withPort(env.MEILI_URL!, proxy.port),
    });
    lines.length = 0;
    try {
      expect((await get(app, '/v1/org/search?q=acme', key)).status).toBe(200);
      await proxy.cut();
      for (let i = 0; i < 4; i++) expect((await get(app, '/v1/org/search?q=acme', key)).status).toBe(503);
      await proxy.start();
      expect(
        await eventually(async () => (await get(app, '/v1/org/search?q=acme', key)).status === 200),
      ).toBe(true);
      expect(count(/^Meilisearch connection lost/)).toBe(1);
      expect(count(/^Meilisearch connection recovered after \d+\.\d s$/)).toBe(1);
    } finally {
      await app.close();
      await proxy.cut();
    }
  });
});
