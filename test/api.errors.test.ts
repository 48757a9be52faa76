import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../api/app.js';
import { loadConfig } from '../shared/config.js';
import { get, importOneOrg, newAccount, startTestApi } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';
import { hostPort, TcpProxy, withPort } from './support/tcp-proxy.js';

const UNAVAILABLE = {
  code: 503,
  message: 'Service Unavailable: a backing service is unavailable, retry shortly',
};

/** Polls until `check` passes; recovery is asserted, its speed is not. */
async function eventually(check: () => Promise<boolean>, attempts = 100): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

describe('errors', () => {
  let t: TestDb;
  let app: FastifyInstance;
  let key: string;
  let orgPath: string;
  const redisNs = testQueuePrefix();

  beforeAll(async () => {
    t = await createTestDb();
    orgPath = `/v1/org/${await importOneOrg(t.db)}`;
    app = await startTestApi({ databaseUrl: t.url, prefix: redisNs.prefix });
    key = (await newAccount(t.db)).api_key;
  });

  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await redisNs.cleanup();
  });

  it('an unknown route is 404 {code, message}', async () => {
    const res = await get(app, '/v1/nothing/here', key);
    expect(res).toMatchObject({
      status: 404,
      body: { code: 404, message: 'Not Found: No route matches this path' },
    });
    expect(res.headers['x-request-id']).toEqual(expect.any(String));
  });

  it('a known path with the wrong method is 405 with Allow', async () => {
    const res = await app.inject({ method: 'DELETE', url: `${orgPath}?api_key=${key}` });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET');
    expect(res.json()).toEqual({
      code: 405,
      message: 'Method Not Allowed: DELETE is not allowed here; use GET',
    });
    const post = await app.inject({ method: 'GET', url: `/v1/contact?api_key=${key}` });
    expect(post.statusCode).toBe(405);
    expect(post.headers.allow).toBe('POST');
  });

  it('malformed JSON and oversized bodies are 400 and 413, not 500', async () => {
    const malformed = await app.inject({
      method: 'POST',
      url: `/v1/contact?api_key=${key}`,
      headers: { 'content-type': 'application/json' },
      payload: '{"full_name": "A B",}',
    });
    expect(malformed.json()).toEqual({ code: 400, message: 'Bad Request: body is not valid JSON' });
    const huge = await app.inject({
      method: 'POST',
      url: `/v1/contact?api_key=${key}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ full_name: 'x'.repeat(20_000) }),
    });
    expect(huge.json()).toEqual({ code: 413, message: 'Payload Too Large: request body is too large' });
  });

  it('an unexpected error is a plain 500: no message, stack, SQL or path reaches the client', async () => {
    const config = loadConfig({
      DATABASE_URL: t.url,
      QUEUE_PREFIX: redisNs.prefix,
      REDIS_URL: TEST_REDIS_URL,
    });
    const broken = await buildApp({ config });
    broken.get('/boom', async () => {
      throw new Error('relation "secret_table" does not exist at /work/main/api/x.ts:1');
    });
    try {
      const res = await broken.inject({ method: 'GET', url: '/boom' });
      expect(res.statusCode).toBe(500);
      expect(res.body).toBe(
        JSON.stringify({ code: 500, message: 'Internal Server Error: unexpected error' }),
      );
    } finally {
      await broken.close();
    }
  });

  it('health probes need no key and cost nothing', async () => {
    expect((await app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ok' });
  });

  it('Redis away: 503 at once, nothing internal in the body, and recovery by itself', async () => {
    const target = hostPort(TEST_REDIS_URL, 6379);
    const proxy = new TcpProxy(target.host, target.port);
    await proxy.start();
    const viaProxy = await startTestApi({
      databaseUrl: t.url,
      prefix: redisNs.prefix,
      redisUrl: withPort(TEST_REDIS_URL, proxy.port),
    });
    try {
      expect((await get(viaProxy, orgPath, key)).status).toBe(200);
      await proxy.cut();
      expect(await get(viaProxy, orgPath, key)).toMatchObject({ status: 503, body: UNAVAILABLE });
      const ready = await viaProxy.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expect(ready.json()).toEqual({ code: 503, message: 'Service Unavailable: redis not reachable' });
      await proxy.start();
      expect(await eventually(async () => (await get(viaProxy, orgPath, key)).status === 200)).toBe(true);
    } finally {
      await viaProxy.close();
      await proxy.cut();
    }
  });

  it('Postgres away: 503 at once, and recovery by itself', async () => {
    const target = hostPort(t.url, 5432);
    const proxy = new TcpProxy(target.host, target.port);
    await proxy.start();
    const viaProxy = await startTestApi({ databaseUrl: withPort(t.url, proxy.port), prefix: redisNs.prefix });
    // A key this process has not seen yet needs Postgres to be authenticated.
    const fresh = (await newAccount(t.db)).api_key;
    try {
      expect((await get(viaProxy, orgPath, key)).status).toBe(200);
      await proxy.cut();
      expect(await get(viaProxy, orgPath, key)).toMatchObject({ status: 503, body: UNAVAILABLE });
      expect(await get(viaProxy, orgPath, fresh)).toMatchObject({ status: 503, body: UNAVAILABLE });
      expect((await viaProxy.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({
        code: 503,
        message: 'Service Unavailable: postgres not reachable',
      });
      await proxy.start();
      expect(await eventually(async () => (await get(viaProxy, orgPath, fresh)).status === 200)).toBe(true);
    } finally {
      await viaProxy.close();
      await proxy.cut();
    }
  });
});
