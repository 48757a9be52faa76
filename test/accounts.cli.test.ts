import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createKey, revokeKey } from '../api/accounts/account.service.js';
import { get, importOneOrg, startTestApi } from './support/api.js';
import { runCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';

/**
 * `bizdir accounts list | show | update`: what an operator sees, through the real CLI.
 * Accounts and keys are made in-process (their own CLI is tested in api.auth and api.rate-limit), so
 * only the commands under test start a process: each takes seconds on a busy machine.
 */
const CLI_TEST_TIMEOUT = 180_000;

describe('bizdir accounts list / show / update', () => {
  let t: TestDb;
  let app: FastifyInstance;
  let env: Record<string, string>;
  let orgPath: string;
  const redisNs = testQueuePrefix();

  beforeAll(async () => {
    t = await createTestDb();
    env = { DATABASE_URL: t.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: redisNs.prefix };
    orgPath = `/v1/org/${await importOneOrg(t.db)}`;
    app = await startTestApi({ databaseUrl: t.url, prefix: redisNs.prefix });
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await redisNs.cleanup();
  });

  const cli = async (...args: string[]) => {
    const r = await runCli(args, env);
    expect(r.code, r.stderr).toBe(0);
    return r.stdout;
  };

  it(
    'shows plan, period, credits used and left, rate limit and keys (prefix and status, never the secret)',
    async () => {
      const anchor = new Date().toISOString().slice(0, 10);
      const a = await createAccount(t.db, {
        name: 'Acme Data',
        credits: 100,
        anchorDate: anchor,
        rateLimit: { max: 600, windowSeconds: 300 },
      });
      const b = await createAccount(t.db, { name: 'Other', credits: 5, anchorDate: anchor });
      const second = await createKey(t.db, a.account_id);
      expect((await revokeKey(t.db, null, redisNs.prefix, second.key_prefix)).revoked).toBe(true);
      for (let i = 0; i < 3; i++) expect((await get(app, orgPath, a.api_key)).status).toBe(200);

      const shown = JSON.parse(await cli('accounts', 'show', a.account_id, '--json'));
      expect(shown).toEqual({
        account_id: a.account_id,
        name: 'Acme Data',
        subscription_id: expect.stringMatching(/^sub_/),
        credits_per_period: 100,
        anchor_date: anchor,
        period_start: `${anchor}T00:00:00.000Z`,
        next_period_start: expect.any(String),
        credits_used: 3,
        credits_left: 97,
        rate_limit: { requests: 600, seconds: 300 },
        keys: [
          {
            prefix: a.api_key.slice(0, 12),
            status: 'active',
            created_at: expect.any(String),
            revoked_at: null,
          },
          {
            prefix: second.api_key.slice(0, 12),
            status: 'revoked',
            created_at: expect.any(String),
            revoked_at: expect.any(String),
          },
        ],
      });
      const listed = JSON.parse(await cli('accounts', 'list', '--json')) as {
        accounts: { account_id: string }[];
      };
      expect(listed.accounts.map((x) => x.account_id)).toEqual([a.account_id, b.account_id]);
      expect(listed.accounts[0]).toEqual(shown);

      const text = await cli('accounts', 'show', a.account_id);
      expect(text).toMatch(/credits used\s+3\n/);
      expect(text).toMatch(/credits left\s+97\n/);
      expect(text).toMatch(/rate limit\s+600 requests per 300 s\n/);
      expect(text).toContain(`${second.api_key.slice(0, 12)}  revoked`);
      const table = await cli('accounts', 'list');
      expect(table).toMatch(/^ACCOUNT\s+NAME\s+PERIOD START\s+USED\s+LEFT\s+OF\s+RATE LIMIT\s+KEYS/);
      expect(table).toContain('600/300s');
      // Never the secret part of any key.
      for (const out of [JSON.stringify(shown), JSON.stringify(listed), text, table]) {
        for (const key of [a.api_key, second.api_key, b.api_key]) expect(out).not.toContain(key.slice(12));
      }
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    'update changes credits and the rate limit (none removes it); unknown ids are one clear error',
    async () => {
      const a = await createAccount(t.db, { name: 'Upd', credits: 10, anchorDate: '2026-01-01' });
      const updated = JSON.parse(
        await cli('accounts', 'update', a.account_id, '--credits', '20', '--rate-limit', '5/60', '--json'),
      );
      expect(updated).toMatchObject({
        credits_per_period: 20,
        credits_left: 20,
        rate_limit: { requests: 5, seconds: 60 },
      });
      const cleared = JSON.parse(
        await cli('accounts', 'update', a.account_id, '--rate-limit', 'none', '--json'),
      );
      expect(cleared).toMatchObject({ credits_per_period: 20, rate_limit: null });

      const unknown = await runCli(['accounts', 'update', 'acct_nosuch', '--credits', '1'], env);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr.trim()).toBe('bizdir: no account has id acct_nosuch');
      const bad = await runCli(['accounts', 'update', a.account_id, '--rate-limit', '10'], env);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/--rate-limit must be N\/SECONDS/);
    },
    CLI_TEST_TIMEOUT,
  );
});
