import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { creditsUsed, get, importOneOrg, newAccount, startTestApi } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';

interface Meta {
  requests_this_period: number;
  credit_available_this_period: number;
  credit_used_this_request: number;
  credit_used_this_period: number;
  credit_remaining_this_period: number;
  period_start: string;
  next_period_start: string;
}

/** How many responses had each status, e.g. { 200: 50, 402: 150 }: a failure shows any stray 503. */
function tally(results: { status: number }[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

const EXHAUSTED = { code: 402, message: 'Payment Required: Data credits exhausted for this period' };

describe('data credits', () => {
  let t: TestDb;
  let orgPath: string;
  let now = new Date('2026-02-27T12:00:00Z');
  const clock = () => now;
  const redisNs = testQueuePrefix();
  const apps: FastifyInstance[] = [];
  let app: FastifyInstance;

  const start = async () => {
    const a = await startTestApi({ databaseUrl: t.url, prefix: redisNs.prefix, clock });
    apps.push(a);
    return a;
  };
  const meta = (body: Record<string, unknown>) => body.request as Meta;
  const ledger = (subscriptionId: string) => creditsUsed(t.db, subscriptionId);

  beforeAll(async () => {
    t = await createTestDb();
    orgPath = `/v1/org/${await importOneOrg(t.db)}`;
    app = await start();
  });

  afterAll(async () => {
    for (const a of apps) await a.close();
    await t?.drop();
    await redisNs.cleanup();
  });

  it('counts each 200, the request object counting itself; 404s cost nothing; 402 when spent', async () => {
    const { api_key } = await newAccount(t.db, 3, '2026-01-31');
    const first = await get(app, orgPath, api_key);
    expect(meta(first.body)).toMatchObject({
      requests_this_period: 1,
      credit_available_this_period: 3,
      credit_used_this_request: 1,
      credit_used_this_period: 1,
      credit_remaining_this_period: 2,
    });
    const missing = await get(app, '/v1/org/no-such-org.bizdir.test', api_key);
    expect(missing.status).toBe(404);
    const second = await get(app, orgPath, api_key);
    expect(meta(second.body)).toMatchObject({ credit_used_this_period: 2, credit_remaining_this_period: 1 });
    const third = await get(app, orgPath, api_key);
    expect(meta(third.body)).toMatchObject({ credit_used_this_period: 3, credit_remaining_this_period: 0 });
    const fourth = await get(app, orgPath, api_key);
    expect(fourth).toMatchObject({ status: 402, body: EXHAUSTED });
    // Spent, a 404 is still a 402 (the credit check comes first) and costs nothing either.
    expect((await get(app, '/v1/org/no-such-org.bizdir.test', api_key)).status).toBe(402);
  });

  it('starts a new period on the anchor day (clamped to short months), with fresh credits', async () => {
    now = new Date('2026-02-27T23:59:59Z');
    const { api_key } = await newAccount(t.db, 2, '2026-01-31');
    const before = meta((await get(app, orgPath, api_key)).body);
    expect(before.period_start).toBe('2026-01-31T00:00:00.000Z');
    expect(before.next_period_start).toBe('2026-02-28T00:00:00.000Z');
    expect(meta((await get(app, orgPath, api_key)).body).credit_used_this_period).toBe(2);
    expect((await get(app, orgPath, api_key)).status).toBe(402);

    now = new Date('2026-02-28T00:00:00Z');
    const after = meta((await get(app, orgPath, api_key)).body);
    expect(after).toMatchObject({
      period_start: '2026-02-28T00:00:00.000Z',
      next_period_start: '2026-03-31T00:00:00.000Z',
      credit_used_this_period: 1,
      credit_remaining_this_period: 1,
    });
    now = new Date('2026-02-27T12:00:00Z');
  });

  it('200 requests at once on 50 credits: exactly 50 succeed, 150 get 402', async () => {
    const { api_key, subscription_id } = await newAccount(t.db, 50);
    const results = await Promise.all(Array.from({ length: 200 }, () => get(app, orgPath, api_key)));
    expect(tally(results)).toEqual({ 200: 50, 402: 150 });
    const used = results.filter((r) => r.status === 200).map((r) => meta(r.body).credit_used_this_period);
    expect(new Set(used).size).toBe(50);
    expect(await ledger(subscription_id)).toBe(50);
  });

  it('the same across two app instances (own pools, own Redis connections, own ledger writers)', async () => {
    const other = await start();
    const { api_key, subscription_id } = await newAccount(t.db, 50);
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => get(i % 2 === 0 ? app : other, orgPath, api_key)),
    );
    expect(tally(results)).toEqual({ 200: 50, 402: 150 });
    expect(await ledger(subscription_id)).toBe(50);
  });

  /** Loses every key of this test's namespace (what a flush or a restart without persistence does). */
  const loseRedis = async () => {
    const redis = new Redis(TEST_REDIS_URL);
    const keys = await redis.keys(`${redisNs.prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    return keys.length;
  };

  it('usage survives losing Redis: counters are rebuilt from the Postgres ledger', async () => {
    const { api_key, subscription_id } = await newAccount(t.db, 10);
    for (let i = 0; i < 4; i++) expect((await get(app, orgPath, api_key)).status).toBe(200);
    expect(await loseRedis()).toBeGreaterThan(0);
    expect(meta((await get(app, orgPath, api_key)).body).credit_used_this_period).toBe(5);
    expect(await ledger(subscription_id)).toBe(5);

    // Lost again, then 20 requests at once race to rebuild: still exactly the 5 credits left.
    await loseRedis();
    const results = await Promise.all(Array.from({ length: 20 }, () => get(app, orgPath, api_key)));
    expect(tally(results)).toEqual({ 200: 5, 402: 15 });
    expect(await ledger(subscription_id)).toBe(10);
  });

  it('the Postgres ledger has the last word when a Redis counter is behind it', async () => {
    const { api_key, subscription_id } = await newAccount(t.db, 3);
    let last: Meta | undefined;
    for (let i = 0; i < 3; i++) last = meta((await get(app, orgPath, api_key)).body);
    const sub = await t.db
      .selectFrom('subscriptions')
      .select('id')
      .where('uid', '=', subscription_id.replace(/^sub_/, ''))
      .executeTakeFirstOrThrow();
    const counter = `${redisNs.prefix}:api:used:${sub.id}:${Date.parse(last!.period_start)}`;
    // A counter rebuilt while a charge was still being committed can lag the ledger; force that.
    const redis = new Redis(TEST_REDIS_URL);
    expect(await redis.get(counter)).toBe('3');
    await redis.set(counter, '0', 'KEEPTTL');
    expect(await get(app, orgPath, api_key)).toMatchObject({ status: 402, body: EXHAUSTED });
    expect(await ledger(subscription_id)).toBe(3);
    // The counter was raised to the ledger's count, so later requests are refused by Redis alone.
    expect(await redis.get(counter)).toBe('3');
    redis.disconnect();
  });
});
