import type { ChildProcess } from 'node:child_process';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../api/accounts/account.service.js';
import { parseRateLimit } from '../bin/commands/accounts.js';
import { get, importOneOrg, startTestApi } from './support/api.js';
import { runCli, spawnCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';
import { freePort } from './support/tcp-proxy.js';

/**
 * Per-account rate limits, counted in Redis and shared by every API process: checked
 * against two real `bizdir serve` processes on one database and one Redis namespace.
 */

interface Served {
  child: ChildProcess;
  base: string;
  exited: Promise<number | null>;
}

async function serve(env: Record<string, string>): Promise<Served> {
  const port = await freePort();
  const child = spawnCli(['serve'], { ...env, PORT: String(port) });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 1200; i++) {
    const up = await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return { child, base, exited };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('bizdir serve did not come up');
}

const tally = (statuses: number[]) => {
  const counts: Record<number, number> = {};
  for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
  return counts;
};

describe('rate limits across two API processes', { timeout: 120_000 }, () => {
  let t: TestDb;
  let orgPath: string;
  let env: Record<string, string>;
  const servers: Served[] = [];
  const redisNs = testQueuePrefix();

  const ledger = async (subscriptionId: string) => {
    const rows = await t.db
      .selectFrom('usage_periods')
      .innerJoin('subscriptions', 'subscriptions.id', 'usage_periods.subscription_id')
      .select('usage_periods.used')
      .where('subscriptions.uid', '=', subscriptionId.replace(/^sub_/, ''))
      .execute();
    return rows.reduce((n, r) => n + r.used, 0);
  };

  beforeAll(async () => {
    t = await createTestDb();
    orgPath = `/v1/org/${await importOneOrg(t.db)}`;
    env = { DATABASE_URL: t.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: redisNs.prefix };
    servers.push(...(await Promise.all([serve(env), serve(env)])));
  }, 180_000);

  afterAll(async () => {
    for (const s of servers) s.child.kill('SIGTERM');
    await Promise.all(servers.map((s) => s.exited));
    await t?.drop();
    await redisNs.cleanup();
  });

  it('N served, the rest 429 with Retry-After and no credit; headers count down; /v1/usage agrees', async () => {
    const created = await runCli(
      ['accounts', 'create', '--name', 'Limited', '--credits', '1000', '--rate-limit', '12/120', '--json'],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    const { api_key, subscription_id } = JSON.parse(created.stdout) as {
      api_key: string;
      subscription_id: string;
    };
    // 40 requests at once, alternating between the two processes.
    const results = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const res = await fetch(`${servers[i % 2]!.base}${orgPath}?api_key=${api_key}`);
        return {
          status: res.status,
          headers: res.headers,
          body: (await res.json()) as Record<string, unknown>,
        };
      }),
    );
    expect(tally(results.map((r) => r.status))).toEqual({ 200: 12, 429: 28 });
    expect(await ledger(subscription_id)).toBe(12);

    for (const r of results) {
      expect(r.headers.get('ratelimit-limit')).toBe('12');
      const reset = Number(r.headers.get('ratelimit-reset'));
      expect(reset).toBeGreaterThan(0);
      expect(reset).toBeLessThanOrEqual(120);
    }
    // Each 200 saw its own place in the window: 11, 10, ... 0 left, once each.
    const remaining = results
      .filter((r) => r.status === 200)
      .map((r) => Number(r.headers.get('ratelimit-remaining')))
      .sort((a, b) => b - a);
    expect(remaining).toEqual([11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    const refused = results.filter((r) => r.status === 429);
    for (const r of refused) {
      expect(r.headers.get('ratelimit-remaining')).toBe('0');
      expect(Number(r.headers.get('retry-after'))).toBe(Number(r.headers.get('ratelimit-reset')));
      expect(r.body).toEqual({
        code: 429,
        message: expect.stringMatching(
          /^Too Many Requests: rate limit of 12 requests per 120 seconds reached; retry in \d+ seconds$/,
        ),
      });
    }
    // The usage endpoint reports the same window, counts nothing and is itself never refused.
    for (const s of servers) {
      const res = await fetch(`${s.base}/v1/usage?api_key=${api_key}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as {
        request: Record<string, unknown>;
        rate_limit: Record<string, unknown>;
      };
      expect(body.rate_limit).toMatchObject({ limit: 12, window_seconds: 120, remaining: 0 });
      expect(body.rate_limit.reset).toBe(Number(res.headers.get('ratelimit-reset')));
      expect(res.headers.get('ratelimit-remaining')).toBe('0');
      expect(body.request).toMatchObject({ credit_used_this_request: 0, credit_used_this_period: 12 });
    }
    expect(await ledger(subscription_id)).toBe(12);
  });

  it('no limit when none is set: no RateLimit headers, everything served', async () => {
    const { api_key } = await createAccount(t.db, {
      name: 'Unlimited',
      credits: 1000,
      anchorDate: '2026-01-01',
    });
    const statuses = await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const res = await fetch(`${servers[i % 2]!.base}${orgPath}?api_key=${api_key}`);
        await res.arrayBuffer();
        expect(res.headers.get('ratelimit-limit')).toBeNull();
        return res.status;
      }),
    );
    expect(tally(statuses)).toEqual({ 200: 60 });
    const usage = await fetch(`${servers[0]!.base}/v1/usage?api_key=${api_key}`);
    expect(((await usage.json()) as { rate_limit: unknown }).rate_limit).toEqual({
      limit: null,
      window_seconds: null,
      remaining: null,
      reset: null,
    });
  });
});

describe('rate limits in one process', () => {
  let t: TestDb;
  let app: FastifyInstance;
  let orgPath: string;
  const redisNs = testQueuePrefix();

  beforeAll(async () => {
    t = await createTestDb();
    orgPath = `/v1/org/${await importOneOrg(t.db)}`;
    app = await startTestApi({ databaseUrl: t.url, prefix: redisNs.prefix });
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await redisNs.cleanup();
  });

  it('a new window starts when the old one ends', async () => {
    const { api_key } = await createAccount(t.db, {
      name: 'Short window',
      credits: 100,
      anchorDate: '2026-01-01',
      rateLimit: { max: 2, windowSeconds: 1 },
    });
    expect((await get(app, orgPath, api_key)).status).toBe(200);
    expect((await get(app, orgPath, api_key)).status).toBe(200);
    const refused = await get(app, orgPath, api_key);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    await new Promise((r) => setTimeout(r, 1100));
    const again = await get(app, orgPath, api_key);
    expect(again.status).toBe(200);
    expect(again.headers['ratelimit-remaining']).toBe('1');
  });

  it('errors, 404s and 304s count against the limit; a bad key is 403 and counts nothing', async () => {
    const { api_key } = await createAccount(t.db, {
      name: 'Counting',
      credits: 100,
      anchorDate: '2026-01-01',
      rateLimit: { max: 4, windowSeconds: 60 },
    });
    const first = await get(app, orgPath, api_key);
    const etag = first.headers.etag as string;
    const missing = await get(app, '/v1/org/no-such-org.bizdir.test', api_key);
    expect(missing.status).toBe(404);
    expect(missing.headers['ratelimit-remaining']).toBe('2');
    const cached = await app.inject({
      method: 'GET',
      url: `${orgPath}?api_key=${api_key}`,
      headers: { 'if-none-match': etag },
    });
    expect(cached.statusCode).toBe(304);
    expect(cached.headers['ratelimit-remaining']).toBe('1');
    expect((await get(app, orgPath, `bzk_${'B'.repeat(43)}`)).status).toBe(403);
    expect((await get(app, orgPath, api_key)).headers['ratelimit-remaining']).toBe('0');
    // Over the limit, a current tag gets the 429, not a 304.
    const over = await app.inject({
      method: 'GET',
      url: `${orgPath}?api_key=${api_key}`,
      headers: { 'if-none-match': etag },
    });
    expect(over.statusCode).toBe(429);
  });

  it('parses --rate-limit N/SECONDS and none, and refuses anything else', () => {
    expect(parseRateLimit('600/300')).toEqual({ max: 600, windowSeconds: 300 });
    expect(parseRateLimit('none')).toBeNull();
    for (const bad of ['0/10', '10/0', '10', '10/s', '-1/10', '1.5/10', '']) {
      expect(() => parseRateLimit(bad), bad).toThrow(/--rate-limit must be N\/SECONDS/);
    }
  });
});
