import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAccount, SUFFIX, startTestApi } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { importFeed } from './support/import.js';
import { testQueuePrefix } from './support/redis.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';

/** Conditional reads: strong ETags, 304 for a current tag, free and not counted. */

let t: TestDb;
let app: FastifyInstance;
const redis = testQueuePrefix();

const ORG = `/v1/org/quayside-hardware.${SUFFIX}`;
const LIST = `${ORG}/locations`;
const LOCATION = `/v1/location/quayside-hardware-scarborough.loc.${SUFFIX}`;
const DEFAULT_LOCATION = `/v1/location/quayside-hardware-whitby.loc.${SUFFIX}`;

beforeAll(async () => {
  t = await createTestDb();
  await importFeed(t.db, 'registrar', 'samples/registrar-sample.csv');
  await importFeed(t.db, 'locations', 'samples/locations-sample.csv');
  app = await startTestApi({ databaseUrl: t.url, prefix: redis.prefix });
});
afterAll(async () => {
  await app?.close();
  await redis.cleanup();
  await t?.drop();
});

async function read(url: string, apiKey: string | undefined, ifNoneMatch?: string) {
  const sep = url.includes('?') ? '&' : '?';
  const res = await app.inject({
    method: 'GET',
    url: apiKey === undefined ? url : `${url}${sep}api_key=${encodeURIComponent(apiKey)}`,
    headers: ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch },
  });
  return res;
}

const used = async (apiKey: string) => {
  const res = await read(ORG, apiKey);
  expect(res.statusCode).toBe(200);
  const meta = res.json().request as { credit_used_this_period: number; requests_this_period: number };
  return meta;
};

describe('conditional reads', () => {
  it('every 200 of the three reads carries a strong ETag, the same for the same body', async () => {
    const { api_key } = await newAccount(t.db);
    for (const url of [ORG, LIST, LOCATION, `${LIST}?limit=1&offset=1`]) {
      const a = await read(url, api_key);
      const b = await read(url, api_key);
      expect(a.statusCode).toBe(200);
      expect(a.headers.etag).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
      // The request object differs between the two; the tag does not.
      expect(a.json().request.id).not.toBe(b.json().request.id);
      expect(b.headers.etag).toBe(a.headers.etag);
    }
    // Another page is another body, and the stable domain names the same Org as the public one.
    expect((await read(`${LIST}?limit=1`, api_key)).headers.etag).not.toBe(
      (await read(`${LIST}?limit=1&offset=1`, api_key)).headers.etag,
    );
    const org = (await read(ORG, api_key)).json().org as { domain: string };
    expect((await read(`/v1/org/${org.domain}`, api_key)).headers.etag).toBe(
      (await read(ORG, api_key)).headers.etag,
    );
  });

  it('If-None-Match with the current tag: 304, empty body, no credit, not counted; stale tag: 200', async () => {
    const { api_key } = await newAccount(t.db, 100);
    for (const url of [ORG, LIST, LOCATION]) {
      const first = await read(url, api_key);
      const etag = first.headers.etag as string;
      const before = await used(api_key);
      for (const header of [etag, `"stale", ${etag}`, `W/${etag}`, '*']) {
        const cached = await read(url, api_key, header);
        expect(cached.statusCode).toBe(304);
        expect(cached.body).toBe('');
        expect(cached.headers.etag).toBe(etag);
        expect(cached.headers['x-request-id']).toBeTruthy();
      }
      const after = await used(api_key);
      // Only the two `used` reads were charged, not the four 304s.
      expect(after.credit_used_this_period).toBe(before.credit_used_this_period + 1);
      expect(after.requests_this_period).toBe(before.requests_this_period + 1);

      const stale = await read(url, api_key, '"not-the-tag"');
      expect(stale.statusCode).toBe(200);
      expect(stale.headers.etag).toBe(etag);
      expect(stale.json().request.credit_used_this_request).toBe(1);
    }
  });

  it('authentication comes first: a bad or missing key with a current tag is 403, never 304', async () => {
    const { api_key } = await newAccount(t.db);
    const etag = (await read(ORG, api_key)).headers.etag as string;
    for (const key of [undefined, 'bzk_not-a-key', `bzk_${'A'.repeat(43)}`]) {
      const res = await read(ORG, key, etag);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ code: 403, message: 'Forbidden: Invalid api_key parameter value' });
    }
  });

  it('a 304 is free even when the period is spent (the 200 is a 402)', async () => {
    const { api_key } = await newAccount(t.db, 1);
    const etag = (await read(ORG, api_key)).headers.etag as string;
    expect((await read(ORG, api_key)).statusCode).toBe(402);
    expect((await read(ORG, api_key, etag)).statusCode).toBe(304);
    expect((await read(ORG, api_key, '"stale"')).statusCode).toBe(402);
  });

  it('conditional requests with stale tags take credits exactly: 60 at once on 20 credits, 20 served', async () => {
    const { api_key } = await newAccount(t.db, 20);
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => read(i % 2 ? ORG : LOCATION, api_key, '"stale"')),
    );
    const counts: Record<number, number> = {};
    for (const r of results) counts[r.statusCode] = (counts[r.statusCode] ?? 0) + 1;
    expect(counts).toEqual({ 200: 20, 402: 40 });
  });

  it('unknown domains are 404 whatever the If-None-Match', async () => {
    const { api_key } = await newAccount(t.db);
    const res = await read(`/v1/org/no-such-org.${SUFFIX}`, api_key, '*');
    expect(res.statusCode).toBe(404);
  });

  it('an import that changes a Location changes its tag, its list page tag, and no other', async () => {
    const { api_key } = await newAccount(t.db);
    const tags = async () => ({
      org: (await read(ORG, api_key)).headers.etag,
      list: (await read(LIST, api_key)).headers.etag,
      location: (await read(LOCATION, api_key)).headers.etag,
      defaultLocation: (await read(DEFAULT_LOCATION, api_key)).headers.etag,
    });
    const before = await tags();
    // Re-importing the same sheet changes nothing, so no tag moves.
    await importFeed(t.db, 'locations', 'samples/locations-sample.csv');
    expect(await tags()).toEqual(before);

    // This sheet changes Scarborough's Saturday hours only (not the default Location).
    await importFeed(t.db, 'locations', 'test/fixtures/locations-en-gb-changed.csv');
    const after = await tags();
    expect(after.location).not.toBe(before.location);
    expect(after.list).not.toBe(before.list);
    expect(after.org).toBe(before.org);
    expect(after.defaultLocation).toBe(before.defaultLocation);
    // The old tag is stale now: a full 200 with the new version.
    const res = await read(LOCATION, api_key, before.location);
    expect(res.statusCode).toBe(200);
    expect(res.json().location.version_number).toBe(2);
    expect((await read(LOCATION, api_key, after.location)).statusCode).toBe(304);
  });

  it('a registrar import that renames an Org changes its tag', async () => {
    const { api_key } = await newAccount(t.db);
    const dir = mkdtempSync(path.join(tmpdir(), 'bizdir-etag-'));
    try {
      const file = path.join(dir, 'registrar.csv');
      writeFileSync(file, registrarCsv([registrarFields('55555555', 'ETAG TEST LTD')]));
      await importFeed(t.db, 'registrar', file, { country: 'GB' });
      const url = `/v1/org/etag-test-ltd.${SUFFIX}`;
      const before = (await read(url, api_key)).headers.etag as string;
      writeFileSync(file, registrarCsv([registrarFields('55555555', 'ETAG TEST RENAMED LTD')]));
      await importFeed(t.db, 'registrar', file, { country: 'GB' });
      const res = await read(url, api_key, before);
      expect(res.statusCode).toBe(200);
      expect(res.json().org.name).toBe('ETAG TEST RENAMED LTD');
      expect(res.headers.etag).not.toBe(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the OpenAPI document shows the ETag header, If-None-Match and the 304', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const p of ['/v1/org/{domain}', '/v1/org/{domain}/locations', '/v1/location/{domain}']) {
      const op = doc.paths[p].get;
      expect(op.responses['200'].headers.ETag).toBeDefined();
      expect(op.responses['304'].description).toMatch(/Not Modified/);
      expect(op.description).toMatch(/If-None-Match/);
    }
  });
});
