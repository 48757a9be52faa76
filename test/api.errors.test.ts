import { describe, expect, it } from 'vitest';
import { buildApp } from '../api/app.js';
import { loadConfig } from '../shared/config.js';
import { get, importOneOrg, newAccount, startTestApi, useTestApi } from './support/api.js';
import { TEST_REDIS_URL } from './support/env.js';
import { hostPort, TcpProxy, withPort } from './support/tcp-proxy.js';
import { eventually } from './support/wait.js';

const UNAVAILABLE = {
  code: 503,
  message: 'Service Unavailable: a backing service is unavailable, retry shortly',
};

describe('errors', () => {
  let orgPath: string;

  const api = useTestApi({
    seed: async (t) => {
      orgPath = `/v1/org/${await importOneOrg(t.db)}`;
    },
    credits: 1_000,
  });

  it('an unknown route is 404 {code, message}', async () => {
    const res = await get(api.app, '/v1/nothing/here', api.key);
    expect(res).toMatchObject({
      status: 404,
      body: { code: 404, message: 'Not Found: No route matches this path' },
    });
    expect(res.headers['x-request-id']).toEqual(expect.any(String));
  });

  it('a known path with the wrong method is 405 with Allow', async () => {
    const res = await api.app.inject({ method: 'DELETE', url: `${orgPath}?api_key=${api.key}` });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET');
    expect(res.json()).toEqual({
      code: 405,
      message: 'Method Not Allowed: DELETE is not allowed here; use GET',
    });
    const post = await api.app.inject({ method: 'GET', url: `/v1/contact?api_key=${api.key}` });
    expect(post.statusCode).toBe(405);
    expect(post.headers.allow).toBe('POST');
  });

  it('malformed JSON and oversized bodies are 400 and 413, not 500', async () => {
    const malformed = await api.app.inject({
      method: 'POST',
      url: `/v1/contact?api_key=${api.key}`,
      headers: { 'content-type': 'application/json' },
      payload: '{"full_name": "A B",}',
    });
    expect(malformed.json()).toEqual({ code: 400, message: 'Bad Request: body is not valid JSON' });
    const huge = await api.app.inject({
      method: 'POST',
      url: `/v1/contact?api_key=${api.key}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ full_name: 'x'.repeat(20_000) }),
    });
    expect(huge.json()).toEqual({ code: 413, message: 'Payload Too Large: request body is too large' });
  });

  it('an unexpected error is a plain 500: no message, stack, SQL or path reaches the client', async () => {
    const config = loadConfig({
      DATABASE_URL: api.t.url,
      QUEUE_PREFIX: api.prefix,
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
    expect((await api.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    expect((await api.app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ok' });
  });

  it('Redis away: 503 at once, nothing internal in the body, and recovery by itself', async () => {
    const target = hostPort(TEST_REDIS_URL, 6379);
    const proxy = new TcpProxy(target.host, target.port);
    await proxy.start();
    const viaProxy = await startTestApi({
      databaseUrl: api.t.url,
      prefix: api.prefix,
      redisUrl: withPort(TEST_REDIS_URL, proxy.port),
    });
    try {
      expect((await get(viaProxy, orgPath, api.key)).status).toBe(200);
      await proxy.cut();
      expect(await get(viaProxy, orgPath, api.key)).toMatchObject({ status: 503, body: UNAVAILABLE });
      const ready = await viaProxy.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expect(ready.json()).toEqual({ code: 503, message: 'Service Unavailable: queue not reachable' });
      await proxy.start();
      expect(await eventually(async () => (await get(viaProxy, orgPath, api.key)).status === 200)).toBe(true);
    } finally {
      await viaProxy.close();
      await proxy.cut();
    }
  });

  it('Postgres away: 503 at once, and recovery by itself', async () => {
    const target = hostPort(api.t.url, 5432);
    const proxy = new TcpProxy(target.host, target.port);
    await proxy.start();
    const viaProxy = await startTestApi({ databaseUrl: withPort(api.t.url, proxy.port), prefix: api.prefix });
    // A key this process has not seen yet needs Postgres to be authenticated.
    const fresh = (await newAccount(api.t.db)).api_key;
    try {
      expect((await get(viaProxy, orgPath, api.key)).status).toBe(200);
      await proxy.cut();
      expect(await get(viaProxy, orgPath, api.key)).toMatchObject({ status: 503, body: UNAVAILABLE });
      expect(await get(viaProxy, orgPath, fresh)).toMatchObject({ status: 503, body: UNAVAILABLE });
      expect((await viaProxy.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({
        code: 503,
        message: 'Service Unavailable: database not reachable',
      });
      await proxy.start();
      expect(await eventually(async () => (await get(viaProxy, orgPath, fresh)).status === 200)).toBe(true);
    } finally {
      await viaProxy.close();
      await proxy.cut();
    }
  });
});
