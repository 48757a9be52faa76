import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, revokeKey } from '../api/accounts/account.service.js';
import { get, importOneOrg, newAccount, startTestApi } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { testQueuePrefix } from './support/redis.js';

/**
 * GET /v1/usage: free, never counted, right when the period's credits are spent (an account that ran
 * out must still be able to see where it stands).
 */

let t: TestDb;
let app: FastifyInstance;
let orgPath: string;
const redisNs = testQueuePrefix();
const now = new Date('2026-03-10T12:00:00Z');

beforeAll(async () => {
  t = await createTestDb();
  orgPath = `/v1/org/${await importOneOrg(t.db)}`;
  app = await startTestApi({ databaseUrl: t.url, prefix: redisNs.prefix, clock: () => now });
});
afterAll(async () => {
  await app?.close();
  await t?.drop();
  await redisNs.cleanup();
});

describe('GET /v1/usage', () => {
  it('answers the request object and rate limit, uses no credit and counts nothing', async () => {
    const { api_key, account_id, subscription_id } = await newAccount(t.db, 5, '2026-01-31');
    const meta = (await get(app, orgPath, api_key)).body.request as Record<string, unknown>;
    for (let i = 0; i < 3; i++) {
      const usage = await get(app, '/v1/usage', api_key);
      expect(usage.status).toBe(200);
      expect(Object.keys(usage.body).sort()).toEqual(['rate_limit', 'request']);
      expect(usage.body.request).toEqual({
        id: usage.headers['x-request-id'],
        success: true,
        period_start: '2026-02-28T00:00:00.000Z',
        next_period_start: '2026-03-31T00:00:00.000Z',
        requests_this_period: 1,
        credit_available_this_period: 5,
        credit_used_this_request: 0,
        credit_used_this_period: 1,
        credit_remaining_this_period: 4,
        account_id,
        subscription_id,
      });
      expect(usage.body.rate_limit).toEqual({
        limit: null,
        window_seconds: null,
        remaining: null,
        reset: null,
      });
    }
    expect(meta.credit_used_this_period).toBe(1);
    // The usage calls were not counted: the next 200 is the second of the period.
    const next = (await get(app, orgPath, api_key)).body.request as Record<string, unknown>;
    expect(next).toMatchObject({ requests_this_period: 2, credit_used_this_period: 2 });
  });

  it("is answered, and right, when the period's credits are spent", async () => {
    const { api_key } = await newAccount(t.db, 2);
    expect((await get(app, orgPath, api_key)).status).toBe(200);
    expect((await get(app, orgPath, api_key)).status).toBe(200);
    expect((await get(app, orgPath, api_key)).status).toBe(402);
    const usage = await get(app, '/v1/usage', api_key);
    expect(usage.status).toBe(200);
    expect(usage.body.request).toMatchObject({
      requests_this_period: 2,
      credit_used_this_request: 0,
      credit_used_this_period: 2,
      credit_remaining_this_period: 0,
    });
  });

  it('a missing, unknown or revoked key is 403', async () => {
    for (const key of [undefined, 'nope', `bzk_${'C'.repeat(43)}`]) {
      expect(await get(app, '/v1/usage', key)).toMatchObject({
        status: 403,
        body: { code: 403, message: 'Forbidden: Invalid api_key parameter value' },
      });
    }
    const { account_id } = await newAccount(t.db, 10);
    const second = await createKey(t.db, account_id);
    expect((await get(app, '/v1/usage', second.api_key)).status).toBe(200);
    await revokeKey(t.db, app.redis, app.config.queuePrefix, second.key_prefix);
    expect((await get(app, '/v1/usage', second.api_key)).status).toBe(403);
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const op = doc.paths['/v1/usage'].get;
    expect(Object.keys(op.responses['200'].content['application/json'].schema.properties).sort()).toEqual([
      'rate_limit',
      'request',
    ]);
  });
});
