import type { FastifyInstance } from 'fastify';
import type { Meilisearch } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../api/app.js';
import { parseServerTiming } from '../search/search-timing.js';
import { loadConfig } from '../shared/config.js';
import { get, newAccount, SUFFIX, startTestApi } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { testIndexName, testMeiliClient } from './support/meili.js';
import { insertOrgs, type TestOrg } from './support/orgs.js';
import { testQueuePrefix } from './support/redis.js';
import { buildTestIndex } from './support/search-index.js';

let t: TestDb;
let app: FastifyInstance;
let meili: Meilisearch;
let key: string;
let orgs: TestOrg[];
const queue = testQueuePrefix();
const indexUid = testIndexName('api_search');

beforeAll(async () => {
  t = await createTestDb();
  meili = testMeiliClient();
  orgs = await insertOrgs(t.db, [
    { name: 'ACME WIDGETS LTD' },
    { name: 'BRIDGET JONES LTD' },
    { name: 'WIDGÉTRY LIMITED' },
    { name: 'ZEBRA HOLDINGS PLC' },
  ]);
  await buildTestIndex(t.db, meili, indexUid);
  app = await startTestApi({ databaseUrl: t.url, prefix: queue.prefix, meiliIndex: indexUid });
  key = (await newAccount(t.db)).api_key;
});

afterAll(async () => {
  await app?.close();
  await queue.cleanup();
  await meili?.deleteIndexIfExists(indexUid);
  await t?.drop();
});

describe('GET /v1/org/search', () => {
  it('returns the exact Org objects of GET /v1/org/{domain}, in name order, with the exact total', async () => {
    const res = await get(app, '/v1/org/search?q=idget', key);
    expect(res.status).toBe(200);
    const body = res.body as { orgs: { total: number; results: { domain: string; name: string }[] } };
    expect(body.orgs.total).toBe(2);
    expect(body.orgs.results.map((o) => o.name)).toEqual(['ACME WIDGETS LTD', 'BRIDGET JONES LTD']);
    const one = await get(app, `/v1/org/${body.orgs.results[0]!.domain}`, key);
    expect(body.orgs.results[0]).toEqual(one.body.org);
    expect(res.body.request).toMatchObject({ success: true, credit_used_this_request: 1 });
  });

  it('says in Server-Timing where the time of an answer went: search index calls, database reads, the whole', async () => {
    const res = await get(app, '/v1/org/search?q=idget&sort=relevance', key);
    expect(res.status).toBe(200);
    const header = String(res.headers['server-timing']);
    expect(header).toMatch(/^db;dur=[\d.]+, search;dur=[\d.]+, total;dur=[\d.]+$/);
    const t = parseServerTiming(header);
    expect(t.total).toBeGreaterThan(0);
    // Parts of the request, so never longer than it (calls overlap: search is wall time, not a sum).
    expect(t.search).toBeGreaterThan(0);
    expect(t.search).toBeLessThanOrEqual(t.total!);
    expect(t.db).toBeGreaterThan(0);
  });

  it('sends a strong ETag: a current If-None-Match is a free 304, a changed page a new tag', async () => {
    const { api_key: own } = await newAccount(t.db);
    const first = await app.inject({ method: 'GET', url: `/v1/org/search?q=idget&api_key=${own}` });
    expect(first.statusCode).toBe(200);
    const etag = String(first.headers.etag);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
    const again = await app.inject({
      method: 'GET',
      url: `/v1/org/search?q=idget&api_key=${own}`,
      headers: { 'if-none-match': etag },
    });
    expect({ status: again.statusCode, body: again.body, etag: again.headers.etag }).toEqual({
      status: 304,
      body: '',
      etag,
    });
    const usage = await get(app, '/v1/usage', own);
    expect(usage.body.request).toMatchObject({ requests_this_period: 1 });
    const other = await app.inject({ method: 'GET', url: `/v1/org/search?q=idget&offset=1&api_key=${own}` });
    expect(other.headers.etag).not.toBe(etag);
    // The tag covers the Orgs as Postgres has them: a change to a listed Org is a new tag and a 200.
    await t.db
      .updateTable('orgs')
      .set({ informal_name: 'ACME WIDGETS RENAMED' })
      .where('name', '=', 'ACME WIDGETS LTD')
      .execute();
    const changed = await app.inject({
      method: 'GET',
      url: `/v1/org/search?q=idget&api_key=${own}`,
      headers: { 'if-none-match': etag },
    });
    expect(changed.statusCode).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);
    expect(changed.json().orgs.results[0].informal_name).toBe('ACME WIDGETS RENAMED');
  });

  it('applies sort, limit and offset, and matches an exact domain', async () => {
    const all = await get(app, '/v1/org/search?sort=-name&limit=2&offset=1', key);
    const page = all.body.orgs as { total: number; results: { name: string }[] };
    expect(page.total).toBe(4);
    expect(page.results.map((o) => o.name)).toEqual(['WIDGÉTRY LIMITED', 'BRIDGET JONES LTD']);
    const zebra = orgs.find((o) => o.name.startsWith('ZEBRA'))!;
    const byDomain = await get(app, `/v1/org/search?q=${zebra.uid}.gb.${SUFFIX}`, key);
    expect((byDomain.body.orgs as { total: number }).total).toBe(1);
  });

  it.each([
    ['q too long', `q=${'a'.repeat(201)}`, 'q must be at most 200 characters'],
    ['unknown sort', 'sort=size', 'sort must be one of name, -name, updated, -updated, relevance'],
    ['limit 0', 'limit=0', 'limit must be an integer between 1 and 100'],
    ['limit 101', 'limit=101', 'limit must be an integer between 1 and 100'],
    ['limit not a number', 'limit=ten', 'limit must be an integer between 1 and 100'],
    ['negative offset', 'offset=-1', 'offset must be an integer of at least 0'],
    ['window past 10,000', 'offset=9950&limit=100', 'offset + limit must be at most 10000'],
  ])('answers 400 for %s, costing nothing', async (_label, query, reason) => {
    const res = await get(app, `/v1/org/search?${query}`, key);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 400, message: `Bad Request: ${reason}` });
  });

  it('accepts the window edge offset + limit = 10,000', async () => {
    const res = await get(app, '/v1/org/search?offset=9900&limit=100', key);
    expect(res.status).toBe(200);
    expect(res.body.orgs).toEqual({ total: 4, results: [] });
  });

  it('documents q, sort, limit and offset in the OpenAPI document', async () => {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    const doc = res.json() as { paths: Record<string, { get: { parameters: { name: string }[] } }> };
    const names = doc.paths['/v1/org/search']!.get.parameters.map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(['q', 'sort', 'limit', 'offset']));
  });

  it('answers 503 quickly when Meilisearch is unreachable', async () => {
    const down = await buildApp({
      config: loadConfig({
        DATABASE_URL: t.url,
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX: queue.prefix,
        DOMAIN_SUFFIX: SUFFIX,
        LOG_LEVEL: 'silent',
        // Nothing listens on port 9 of the loopback: connection refused.
        MEILI_URL: 'http://127.0.0.1:9',
        MEILI_INDEX: indexUid,
      }),
    });
    try {
      const res = await get(down, '/v1/org/search?q=acme', key);
      expect(res.status).toBe(503);
      expect(res.body.message).toMatch(/^Service Unavailable: /);
    } finally {
      await down.close();
    }
  });
});
