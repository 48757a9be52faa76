import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createEndpoint,
  endpointPublicId,
  replayEndpoint,
} from '../api/webhooks/webhook-endpoint.service.js';
import { deliverEndpoint } from '../webhooks/deliver.js';
import type { ReceiverClient } from '../webhooks/receiver-client.js';
import { newAccount, noDns } from './support/api.js';
import { runCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { FakeFeed } from './support/fake-feed.js';

/**
 * `bizdir webhooks list | show | disable | enable`: what an operator sees, through the real CLI.
 * Endpoints and their deliveries are made in-process; only the commands under test start a process.
 */
const CLI_TEST_TIMEOUT = 180_000;

describe('bizdir webhooks', () => {
  let t: TestDb;
  let env: Record<string, string>;
  let account: string;
  let id: string;
  let rowId: number;
  const feed = new FakeFeed();

  beforeAll(async () => {
    t = await createTestDb();
    env = { DATABASE_URL: t.url };
    const made = await newAccount(t.db);
    account = made.account_id;
    const { id: accountId } = await t.db
      .selectFrom('accounts')
      .select('id')
      .where('uid', '=', account.replace(/^acct_/, ''))
      .executeTakeFirstOrThrow();
    const deps = {
      db: t.db,
      feed,
      allowPrivate: true,
      maxEndpoints: 10,
      resolve: noDns,
      now: () => new Date(),
    };
    const created = await createEndpoint(deps, accountId, {
      url: 'http://127.0.0.1:9/hook',
      types: ['org.*'],
      batch: true,
    });
    rowId = created.endpoint.id;
    id = endpointPublicId(created.endpoint.uid);
    // One failed request (a receiver answering 500), recorded as delivery records it.
    feed.add(2);
    const client: ReceiverClient = {
      post: async () => ({ status: 500, retryAfterMs: null, body: 'boom', durationMs: 12, error: null }),
      close: async () => undefined,
    };
    await deliverEndpoint({ db: t.db, feed, client }, rowId);
  });
  afterAll(async () => {
    await t?.drop();
  });

  const cli = async (...args: string[]) => {
    const r = await runCli(args, env);
    expect(r.code, r.stderr).toBe(0);
    return r.stdout;
  };

  it(
    'lists endpoints with their status, as a table or JSON',
    async () => {
      const table = await cli('webhooks', 'list');
      expect(table).toMatch(/^id\s+account\s+status\s+batch\s+last event\s+next try\s+types\s+url$/m);
      expect(table).toContain(`${id}  ${account}  failing`);
      expect(table).toContain('org.*  http://127.0.0.1:9/hook');
      const json = JSON.parse(await cli('webhooks', 'list', '--json', '--account', account)) as unknown[];
      expect(json).toEqual([
        expect.objectContaining({
          id,
          account_id: account,
          url: 'http://127.0.0.1:9/hook',
          status: 'failing',
          status_reason: 'answered 500: boom',
          failures: 1,
          batch: true,
        }),
      ]);
      expect(JSON.stringify(json)).not.toMatch(/whsec_/);
      const none = await runCli(['webhooks', 'list', '--account', 'acct_nothing1'], env);
      expect(none).toMatchObject({ code: 1, stderr: 'bizdir: no account has id acct_nothing1\n' });
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    'shows one endpoint with its latest requests',
    async () => {
      const text = await cli('webhooks', 'show', id);
      expect(text).toMatch(/^status\s+failing: answered 500: boom$/m);
      expect(text).toMatch(/latest requests \(1\):\n .* 500 +12 ms {2}2 events .*next try/);
      const json = JSON.parse(await cli('webhooks', 'show', id, '--json')) as {
        deliveries: { status: number; event_ids: string[] }[];
      };
      expect(json).toMatchObject({ id, status: 'failing' });
      expect(json.deliveries).toEqual([
        expect.objectContaining({ status: 500, event_ids: feed.events.map((e) => e.id) }),
      ]);
      const missing = await runCli(['webhooks', 'show', 'we_zzzzzzzz'], env);
      expect(missing).toMatchObject({ code: 1, stderr: 'bizdir: no webhook endpoint we_zzzzzzzz\n' });
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    'disables an endpoint (its owner cannot replay it back), and enables it again',
    async () => {
      expect(await cli('webhooks', 'disable', id)).toBe(`webhook endpoint ${id} disabled\n`);
      const shown = JSON.parse(await cli('webhooks', 'show', id, '--json'));
      expect(shown).toMatchObject({
        status: 'disabled',
        status_reason: 'disabled by an operator',
        next_try: null,
      });
      const deps = {
        db: t.db,
        feed,
        allowPrivate: true,
        maxEndpoints: 10,
        resolve: noDns,
        now: () => new Date(),
      };
      await expect(replayEndpoint(deps, rowId, { after: feed.events[0]!.id })).rejects.toMatchObject({
        statusCode: 409,
      });
      const enabled = JSON.parse(await cli('webhooks', 'enable', id, '--json'));
      expect(enabled).toMatchObject({ status: 'active', status_reason: null, failures: 0 });
      expect(await cli('webhooks', 'enable', id)).toBe(`webhook endpoint ${id} was not disabled\n`);
    },
    CLI_TEST_TIMEOUT,
  );
});
