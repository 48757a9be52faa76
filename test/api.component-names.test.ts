import type { FastifyInstance } from 'fastify';
import type { Meilisearch } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../api/app.js';
import { succeeded } from '../search/meili-client.js';
import { parseServerTiming } from '../search/search-timing.js';
import { loadConfig } from '../shared/config.js';
import { newAccount, SUFFIX } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { meiliEnv, testIndexName, testMeiliClient } from './support/meili.js';
import { insertOrgs } from './support/orgs.js';
import { testQueuePrefix } from './support/redis.js';
import { buildTestIndex } from './support/search-index.js';
import { hostPort, TcpProxy, withPort } from './support/tcp-proxy.js';

/**
 * No answer of the API names a component of the stack (issue 49, part 5): not a header, not a body,
 * not the OpenAPI document clients read. Only /metrics and /admin/*, which need the admin token,
 * may. Components are named to clients by what they are for: the search index, the database, the
 * queue.
 */
const COMPONENT = /postgres|redis|meili|bullmq|kysely/i;
const ADMIN_TOKEN = 'component-names-admin-token';

let t: TestDb;
let meili: Meilisearch;
let key: string;
const queue = testQueuePrefix();
const indexUid = testIndexName('component_names');
const apps: FastifyInstance[] = [];

async function appWith(env: Record<string, string> = {}): Promise<FastifyInstance> {
  const app = await buildApp({
    config: loadConfig({
      DATABASE_URL: t.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: queue.prefix,
      DOMAIN_SUFFIX: SUFFIX,
      LOG_LEVEL: 'silent',
      ADMIN_TOKEN,
      ...meiliEnv(indexUid),
      ...env,
    }),
  });
  apps.push(app);
  await app.ready();
  return app;
}

/** Everything a client receives: status line aside, every header (name and value) and the body. */
async function answer(app: FastifyInstance, url: string, headers: Record<string, string> = {}) {
  const res = await app.inject({ method: 'GET', url, headers });
  const seen = [...Object.entries(res.headers).map(([name, value]) => `${name}: ${String(value)}`), res.body];
  return { res, seen: seen.join('\n') };
}

beforeAll(async () => {
  t = await createTestDb();
  meili = testMeiliClient();
  await insertOrgs(t.db, [{ name: 'ACME WIDGETS LTD' }, { name: 'BRIDGET JONES LTD' }]);
  await buildTestIndex(t.db, meili, indexUid);
  key = (await newAccount(t.db)).api_key;
});

afterAll(async () => {
  for (const app of apps) await app.close();
  await queue.cleanup();
  await meili?.deleteIndexIfExists(indexUid);
  await t?.drop();
});

describe('what a client sees names no component', () => {
  it('a search answer: its headers (Server-Timing under neutral names) and its body', async () => {
    const app = await appWith();
    const { res, seen } = await answer(app, `/v1/org/search?q=idget&sort=relevance&api_key=${key}`);
    expect(res.statusCode).toBe(200);
    expect(seen).not.toMatch(COMPONENT);
    const header = String(res.headers['server-timing']);
    expect(header).not.toContain('desc=');
    const timing = parseServerTiming(header);
    expect(Object.keys(timing).sort()).toEqual(['db', 'search', 'total']);
    expect(timing.search).toBeGreaterThan(0);
    expect(timing.search).toBeLessThanOrEqual(timing.total!);
  });

  it('the detailed Server-Timing goes only to the admin token, and names no component either', async () => {
    const app = await appWith();
    const url = `/v1/org/search?q=idget&sort=relevance&api_key=${key}`;
    const admin = await answer(app, url, { authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(admin.res.statusCode).toBe(200);
    expect(admin.seen).not.toMatch(COMPONENT);
    const timing = parseServerTiming(String(admin.res.headers['server-timing']));
    expect(Object.keys(timing).sort()).toEqual(['db', 'search', 'search-self', 'search-slowest', 'total']);
    expect(String(admin.res.headers['server-timing'])).toMatch(/search;dur=[\d.]+;desc="[1-9]\d* calls"/);
    const wrong = await answer(app, url, { authorization: 'Bearer not-the-token' });
    expect(Object.keys(parseServerTiming(String(wrong.res.headers['server-timing']))).sort()).toEqual([
      'db',
      'search',
      'total',
    ]);
  });

  it('the 503 of a search index that cannot be reached', async () => {
    // Nothing listens on port 9 of the loopback: connection refused.
    const app = await appWith({ MEILI_URL: 'http://127.0.0.1:9' });
    const { res, seen } = await answer(app, `/v1/org/search?q=acme&api_key=${key}`);
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ code: 503, message: expect.stringMatching(/^Service Unavailable: /) });
    expect(seen).not.toMatch(COMPONENT);
  });

  it('the 503 of a search index of an older format', async () => {
    const older = testIndexName('component_names_older');
    try {
      await succeeded(meili.createIndex(older, { primaryKey: 'id' }));
      await succeeded(meili.index(older).updateSettings({ sortableAttributes: ['n', 'u', 'd'] }));
      const app = await appWith({ MEILI_INDEX: older });
      const { res, seen } = await answer(app, `/v1/org/search?q=acme&api_key=${key}`);
      expect(res.statusCode).toBe(503);
      expect(res.json().message).toContain('bizdir reindex');
      expect(seen).not.toMatch(COMPONENT);
    } finally {
      await meili.deleteIndexIfExists(older);
    }
  });

  it('the 503 of /readyz while the queue is away', async () => {
    const target = hostPort(TEST_REDIS_URL, 6379);
    const proxy = new TcpProxy(target.host, target.port);
    await proxy.start();
    try {
      const app = await appWith({ REDIS_URL: withPort(TEST_REDIS_URL, proxy.port) });
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      await proxy.cut();
      const { res, seen } = await answer(app, '/readyz');
      expect(res.statusCode).toBe(503);
      expect(seen).not.toMatch(COMPONENT);
    } finally {
      await proxy.cut();
    }
  });

  it('the OpenAPI document (the admin-only /metrics and /admin/* aside)', async () => {
    const app = await appWith();
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json() as { paths: Record<string, unknown> };
    for (const path of Object.keys(doc.paths)) {
      if (path === '/metrics' || path.startsWith('/admin')) delete doc.paths[path];
    }
    expect(JSON.stringify(doc)).not.toMatch(COMPONENT);
    expect(Object.keys(res.headers).join(' ')).not.toMatch(COMPONENT);
  });
});
