import { beforeAll, describe, expect, it } from 'vitest';
import { createKey, revokeKey } from '../api/accounts/account.service.js';
import { parseAnchor, parseCredits } from '../bin/commands/accounts.js';
import { get, importOneOrg, useTestApi } from './support/api.js';
import { runCli } from './support/cli.js';
import { TEST_REDIS_URL } from './support/env.js';

const FORBIDDEN = { code: 403, message: 'Forbidden: Invalid api_key parameter value' };

describe('API keys (created and revoked through the real CLI)', () => {
  let orgPath: string;
  let env: Record<string, string>;
  let account: { account_id: string; subscription_id: string; api_key: string };

  const api = useTestApi({
    seed: async (t, prefix) => {
      env = { DATABASE_URL: t.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix };
      orgPath = `/v1/org/${await importOneOrg(t.db)}`;
    },
  });

  beforeAll(async () => {
    const created = await runCli(
      ['accounts', 'create', '--name', 'Acme Data', '--credits', '100', '--json'],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    account = JSON.parse(created.stdout);
  });

  it('accounts create --json prints account_id, subscription_id and a working api_key; only a hash is stored', async () => {
    expect(Object.keys(account).sort()).toEqual(['account_id', 'api_key', 'subscription_id']);
    const ok = await get(api.app, orgPath, account.api_key);
    expect(ok.status).toBe(200);
    expect(ok.body.request).toMatchObject({
      account_id: account.account_id,
      subscription_id: account.subscription_id,
      credit_available_this_period: 100,
    });
    const stored = await api.t.db.selectFrom('api_keys').selectAll().execute();
    expect(stored).toHaveLength(1);
    expect(JSON.stringify(stored)).not.toContain(account.api_key.slice(12));
    expect(account.api_key.length).toBeGreaterThanOrEqual(4 + 22); // >= 128 random bits in base64url
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['malformed', 'hello'],
    ['unknown but well-formed', `bzk_${'A'.repeat(43)}`],
  ])('a %s key gets the exact 403 body', async (_, key) => {
    expect(await get(api.app, orgPath, key)).toMatchObject({ status: 403, body: FORBIDDEN });
  });

  it('a key in a different case is a different key', async () => {
    const swapped = account.api_key.replace(/[a-zA-Z]/g, (c) =>
      c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase(),
    );
    expect(await get(api.app, orgPath, swapped)).toMatchObject({ status: 403, body: FORBIDDEN });
    expect(await get(api.app, orgPath, account.api_key.toUpperCase())).toMatchObject({
      status: 403,
      body: FORBIDDEN,
    });
  });

  it('the right prefix with a wrong secret is refused', async () => {
    const wrong = account.api_key.slice(0, 12) + 'B'.repeat(account.api_key.length - 12);
    expect(await get(api.app, orgPath, wrong)).toMatchObject({ status: 403, body: FORBIDDEN });
  });

  it('keys create adds a key; keys revoke stops it at once, also in a process that has it cached', async () => {
    const created = await runCli(['keys', 'create', '--account', account.account_id, '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    const second = JSON.parse(created.stdout) as { api_key: string };
    expect((await get(api.app, orgPath, second.api_key)).status).toBe(200);

    const revoked = await runCli(['keys', 'revoke', second.api_key.slice(0, 12)], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(await get(api.app, orgPath, second.api_key)).toMatchObject({ status: 403, body: FORBIDDEN });
    expect((await get(api.app, orgPath, account.api_key)).status).toBe(200);

    // Revoking again finds no live key (the CLI says so and exits 1, through the same function).
    expect((await revokeKey(api.t.db, null, api.prefix, second.api_key.slice(0, 12))).revoked).toBe(false);
  }, 120_000);

  it('refused requests cost nothing, and bad CLI input is refused with a clear reason', async () => {
    const before = (await get(api.app, orgPath, account.api_key)).body.request as {
      credit_used_this_period: number;
    };
    await get(api.app, orgPath, 'nope');
    const after = (await get(api.app, orgPath, account.api_key)).body.request as {
      credit_used_this_period: number;
    };
    expect(after.credit_used_this_period).toBe(before.credit_used_this_period + 1);

    expect(() => parseCredits('lots')).toThrow(/--credits must be a whole number/);
    expect(() => parseAnchor('2026-02-30')).toThrow(/--anchor must be a date/);
    await expect(createKey(api.t.db, 'acct_zzzzzzzz')).rejects.toThrow(/no account has id/);
  });
});
