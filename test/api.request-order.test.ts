import { afterAll, describe, expect, it } from 'vitest';
import { createAccount } from '../api/accounts/account.service.js';
import { get, importOneOrg, newAccount, postJson, useTestApi } from './support/api.js';
import { testIndexName, testMeiliClient } from './support/meili.js';
import { buildTestIndex } from './support/search-index.js';

/**
 * Which answer a request gets when more than one thing is wrong with it, and the edges of its
 * syntax: the key first (403), then the account's standing (402 spent, 429 over the rate limit),
 * whatever else the request gets wrong; a route is a route with or without a trailing slash; paging
 * numbers are plain decimal integers.
 */
describe('request order and syntax', () => {
  let orgPath: string;
  const meili = testMeiliClient();
  const indexUid = testIndexName('request_order');
  const api = useTestApi({
    seed: async (t) => {
      orgPath = `/v1/org/${await importOneOrg(t.db)}`;
      await buildTestIndex(t.db, meili, indexUid);
    },
    credits: 1_000,
    app: { meiliIndex: indexUid },
  });
  afterAll(async () => {
    await meili.deleteIndexIfExists(indexUid);
  });

  const spentKey = async () => {
    const { api_key } = await newAccount(api.t.db, 1);
    expect((await get(api.app, orgPath, api_key)).status).toBe(200);
    expect((await get(api.app, orgPath, api_key)).status).toBe(402);
    return api_key;
  };

  it('one trailing slash reaches the same route', async () => {
    const plain = await get(api.app, '/v1/org/search?q=acme&limit=1', api.key);
    const slashed = await get(api.app, '/v1/org/search/?q=acme&limit=1', api.key);
    expect(plain.status).toBe(200);
    expect(plain.body.orgs).toMatchObject({ total: 1 });
    expect(slashed.status).toBe(200);
    expect(slashed.body.orgs).toEqual(plain.body.orgs);
    expect((await get(api.app, `${orgPath}/`, api.key)).status).toBe(200);
    expect((await get(api.app, `${orgPath}/locations/`, api.key)).status).toBe(200);
    expect((await get(api.app, '/v1/usage/', api.key)).status).toBe(200);
    // A method the route does not have is still 405, slash or not.
    const post = await api.app.inject({ method: 'POST', url: `/v1/org/search/?api_key=${api.key}` });
    expect(post.statusCode).toBe(405);
    expect(post.json()).toEqual({
      code: 405,
      message: 'Method Not Allowed: POST is not allowed here; use GET',
    });
    expect((await get(api.app, '/v1/org/search//', api.key)).status).toBe(404);
  });

  it.each([['1e1'], ['0x10'], ['0b11'], ['+5'], [' 5 '], ['10.0'], ['5.5'], [''], ['Infinity']])(
    'limit=%j is 400 naming its range',
    async (value) => {
      const q = `limit=${encodeURIComponent(value)}`;
      for (const path of [`/v1/org/search?${q}`, `${orgPath}/locations?${q}`]) {
        const res = await get(api.app, path, api.key);
        expect(res).toMatchObject({
          status: 400,
          body: { code: 400, message: 'Bad Request: limit must be an integer between 1 and 100' },
        });
      }
      const offset = await get(api.app, `/v1/org/search?offset=${encodeURIComponent(value)}`, api.key);
      expect(offset.body).toEqual({
        code: 400,
        message: 'Bad Request: offset must be an integer of at least 0',
      });
    },
  );

  it('plain integers, leading zeros included, are taken as they read', async () => {
    const res = await get(api.app, '/v1/org/search?limit=007&offset=00', api.key);
    expect(res.status).toBe(200);
    expect((res.body.orgs as { results: unknown[] }).results.length).toBeLessThanOrEqual(7);
    expect((await get(api.app, '/v1/org/search?limit=-1', api.key)).body).toEqual({
      code: 400,
      message: 'Bad Request: limit must be an integer between 1 and 100',
    });
  });

  it('GET /v1/usage checks the key before the query: a bad key is 403 whatever its shape', async () => {
    const forbidden = { code: 403, message: 'Forbidden: Invalid api_key parameter value' };
    for (const query of [
      `api_key=${'k'.repeat(201)}`,
      'api_key=a&api_key=b',
      'api_key=%00',
      'api_key=',
      '',
    ]) {
      const res = await api.app.inject({ method: 'GET', url: `/v1/usage?${query}` });
      expect({ query, status: res.statusCode, body: res.json() }).toEqual({
        query,
        status: 403,
        body: forbidden,
      });
    }
  });

  it('a spent account gets 402 whatever else is wrong with the request, and no credit moves', async () => {
    const key = await spentKey();
    const spent = { code: 402, message: 'Payment Required: Data credits exhausted for this period' };
    const asked = [
      await get(api.app, '/v1/org/search?limit=0', key),
      await get(api.app, '/v1/org/search?sort=x', key),
      await get(api.app, '/v1/org/search?offset=9990&limit=20', key),
      await get(api.app, '/v1/org/nothing.example', key),
      await postJson(api.app, '/v1/contact', key, '{"full_name":'),
      await postJson(api.app, '/v1/contact', key, { email: 'x' }),
      await postJson(api.app, '/v1/contact', key, { full_name: 'A B', website_url: 'javascript:x' }),
    ];
    for (const res of asked) expect(res).toMatchObject({ status: 402, body: spent });
    const usage = await get(api.app, '/v1/usage', key);
    expect(usage.body.request).toMatchObject({ credit_used_this_period: 1 });
  });

  it('over the rate limit every request is 429, a bad body too; a bad body counts and carries the headers', async () => {
    const { api_key: key } = await createAccount(api.t.db, {
      name: 'Limited',
      credits: 100,
      anchorDate: '2026-01-15',
      rateLimit: { max: 2, windowSeconds: 3600 },
    });
    const bad = await postJson(api.app, '/v1/contact', key, '{"full_name":');
    expect(bad).toMatchObject({
      status: 400,
      body: { code: 400, message: 'Bad Request: body is not valid JSON' },
    });
    expect(bad.headers['ratelimit-remaining']).toBe('1');
    const wrongType = await api.app.inject({
      method: 'POST',
      url: `/v1/contact?api_key=${key}`,
      headers: { 'content-type': 'text/plain' },
      payload: 'hello',
    });
    expect(wrongType.statusCode).toBe(415);
    expect(wrongType.headers['ratelimit-remaining']).toBe('0');
    for (const res of [
      await postJson(api.app, '/v1/contact', key, '{"full_name":'),
      await get(api.app, '/v1/org/search?limit=0', key),
      await get(api.app, orgPath, key),
    ]) {
      expect(res.status).toBe(429);
      expect(res.body.code).toBe(429);
      expect(res.headers['retry-after']).toEqual(expect.any(String));
    }
    const usage = await get(api.app, '/v1/usage', key);
    expect(usage.body.request).toMatchObject({ credit_used_this_period: 0 });
  });

  it('a path no route takes is 404 or 405 before its body is read', async () => {
    const bodyOnly = await api.app.inject({
      method: 'DELETE',
      url: `${orgPath}?api_key=${api.key}`,
      headers: { 'content-type': 'application/json' },
      payload: '{"not json',
    });
    expect(bodyOnly.statusCode).toBe(405);
    expect(bodyOnly.headers['x-request-id']).toEqual(expect.any(String));
    const big = await api.app.inject({
      method: 'PUT',
      url: `/v1/contact?api_key=${api.key}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ full_name: 'x'.repeat(2_000_000) }),
    });
    expect(big.statusCode).toBe(405);
    expect(big.headers.allow).toBe('POST');
    const nowhere = await api.app.inject({
      method: 'POST',
      url: '/v1/nowhere',
      headers: { 'content-type': 'text/plain' },
      payload: 'x',
    });
    expect(nowhere.json()).toEqual({ code: 404, message: 'Not Found: No route matches this path' });
  });

  it('a search while the live index is missing is 503, not 500, and no credit moves', async () => {
    const { api_key: key } = await newAccount(api.t.db, 10);
    await meili.deleteIndex(indexUid).waitTask();
    const res = await get(api.app, '/v1/org/search?q=acme', key);
    expect(res).toMatchObject({
      status: 503,
      body: {
        code: 503,
        message: 'Service Unavailable: Search is temporarily unavailable: the search index is not ready',
      },
    });
    const usage = await get(api.app, '/v1/usage', key);
    expect(usage.body.request).toMatchObject({ credit_used_this_period: 0 });
  });
});
