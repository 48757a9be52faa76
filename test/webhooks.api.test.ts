import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownEndpointId } from '../api/webhooks/webhook-endpoint.service.js';
import { deliverEndpoint } from '../webhooks/deliver.js';
import type { ReceiverClient } from '../webhooks/receiver-client.js';
import { get, keysOf, newAccount, postJson, startTestApi, useTestApi } from './support/api.js';
import { FakeFeed } from './support/fake-feed.js';
import { testQueuePrefix } from './support/redis.js';

/** There is no DNS here: receiver names resolve through this table. */
const NAMES: Record<string, string[]> = {
  'hooks.example.com': ['93.184.216.34'],
  'loopback.example.com': ['127.0.0.1'],
  'ten.example.com': ['10.1.2.3'],
  'metadata.example.com': ['169.254.169.254'],
  'v6-loopback.example.com': ['::1'],
  'mapped.example.com': ['::ffff:127.0.0.1'],
};
const resolveHost = async (host: string) => {
  const found = NAMES[host];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found.map((address) => ({ address, family: (address.includes(':') ? 6 : 4) as 4 | 6 }));
};

const feed = new FakeFeed();
const api = useTestApi({
  credits: 10_000,
  app: { resolveHost, eventFeed: feed, env: { WEBHOOKS_MAX_ENDPOINTS: '4' } },
});

const BASE = '/v1/webhook_endpoints';
const create = (key: string, body: unknown) => postJson(api.app, BASE, key, body);
const send = async (method: 'DELETE' | 'POST', path: string, key: string) => {
  const res = await api.app.inject({ method, url: `${path}?api_key=${encodeURIComponent(key)}` });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
};

const ENDPOINT_FIELDS = [
  'batch',
  'created',
  'failing_since',
  'id',
  'last_event_id',
  'last_success',
  'next_try',
  'previous_secret_expires',
  'replaying',
  'status',
  'status_reason',
  'types',
  'url',
];

describe('/v1/webhook_endpoints', () => {
  it('creates an endpoint and shows its secret once', async () => {
    feed.add(2);
    const { status, body } = await create(api.key, {
      url: 'https://hooks.example.com/bizdir#frag',
      types: ['org.*', 'location.closed', 'org.*'],
      batch: true,
    });
    expect(status).toBe(200);
    expect(keysOf(body)).toEqual([...ENDPOINT_FIELDS, 'request', 'secret'].sort());
    expect(body).toMatchObject({
      url: 'https://hooks.example.com/bizdir',
      types: ['org.*', 'location.closed'],
      batch: true,
      status: 'active',
      status_reason: null,
      last_event_id: await feed.head(),
      replaying: false,
    });
    expect(body.id).toMatch(/^we_[0-9a-z]{8}$/);
    const secret = body.secret as string;
    expect(secret).toMatch(/^whsec_/);
    expect(Buffer.from(secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
    expect((body.request as { credit_used_this_request: number }).credit_used_this_request).toBe(1);

    const one = await get(api.app, `${BASE}/${body.id}`, api.key);
    expect(one.status).toBe(200);
    expect(keysOf(one.body)).toEqual([...ENDPOINT_FIELDS, 'request'].sort());
    expect(JSON.stringify(one.body)).not.toContain(secret.slice(6));
    const list = await get(api.app, BASE, api.key);
    expect(list.status).toBe(200);
    expect((list.body.endpoints as { id: string }[]).map((e) => e.id)).toContain(body.id);
    expect(JSON.stringify(list.body)).not.toContain(secret.slice(6));
  });

  it.each([
    ['a URL that does not parse', 'not a url', /url must be an absolute https/],
    ['plain http', 'http://hooks.example.com/', /url must be an https:\/\/ URL/],
    ['credentials', 'https://user:pw@hooks.example.com/', /user name or password/],
    ['a name resolving to 127.0.0.1', 'https://loopback.example.com/', /loopback address \(127\.0\.0\.1\)/],
    ['a name resolving to 10.x', 'https://ten.example.com/', /private address \(10\.1\.2\.3\)/],
    ['a name resolving to 169.254.169.254', 'https://metadata.example.com/', /cloud-metadata address/],
    ['a name resolving to ::1', 'https://v6-loopback.example.com/', /loopback address \(::1\)/],
    ['a name resolving to ::ffff:127.0.0.1', 'https://mapped.example.com/', /loopback address/],
    ['the literal [::1]', 'https://[::1]/', /::1 is a loopback address/],
    ['the literal ::ffff:127.0.0.1', 'https://[::ffff:127.0.0.1]/', /is a loopback address/],
    ['the literal 169.254.169.254', 'https://169.254.169.254/latest/meta-data', /cloud-metadata/],
    ['a name that does not resolve', 'https://nowhere.example.com/', /does not resolve/],
  ])('refuses %s with a 400', async (_what, url, message) => {
    const { status, body } = await create(api.key, { url, types: ['*'] });
    expect(status).toBe(400);
    expect(keysOf(body)).toEqual(['code', 'message']);
    expect(body.code).toBe(400);
    expect(body.message).toMatch(message);
  });

  it('refuses unknown types, a missing url and unknown fields with a 400', async () => {
    const unknown = await create(api.key, { url: 'https://hooks.example.com/', types: ['org.deleted'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toMatch(/unknown event type "org.deleted"/);
    const kind = await create(api.key, { url: 'https://hooks.example.com/', types: ['orgs.*'] });
    expect(kind.status).toBe(400);
    expect((await create(api.key, { types: ['*'] })).status).toBe(400);
    expect((await create(api.key, { url: 'https://hooks.example.com/', types: [] })).status).toBe(400);
    const extra = await create(api.key, { url: 'https://hooks.example.com/', types: ['*'], secret: 'x' });
    expect(extra.status).toBe(400);
  });

  it('refuses more endpoints than WEBHOOKS_MAX_ENDPOINTS per account', async () => {
    const account = await newAccount(api.t.db, 100);
    for (let i = 0; i < 4; i++) {
      expect(
        (await create(account.api_key, { url: `https://hooks.example.com/${i}`, types: ['*'] })).status,
      ).toBe(200);
    }
    const fifth = await create(account.api_key, { url: 'https://hooks.example.com/5', types: ['*'] });
    expect(fifth.status).toBe(400);
    expect(fifth.body.message).toMatch(/already has 4 webhook endpoints/);
  });

  it("answers 404 for another account's endpoint and for ids that name none", async () => {
    const mine = await create(api.key, { url: 'https://hooks.example.com/mine', types: ['*'] });
    const other = await newAccount(api.t.db, 100);
    for (const path of [`${BASE}/${mine.body.id}`, `${BASE}/${mine.body.id}/deliveries`]) {
      const res = await get(api.app, path, other.api_key);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ code: 404, message: 'Not Found: No webhook endpoint has this id' });
    }
    expect((await send('DELETE', `${BASE}/${mine.body.id}`, other.api_key)).status).toBe(404);
    expect((await send('POST', `${BASE}/${mine.body.id}/rotate_secret`, other.api_key)).status).toBe(404);
    expect((await get(api.app, `${BASE}/we_zzzzzzzz`, api.key)).status).toBe(404);
    expect((await get(api.app, `${BASE}/nonsense`, api.key)).status).toBe(404);
    expect((await get(api.app, `${BASE}/${mine.body.id}`, api.key)).status).toBe(200);
  });

  it('rotates the secret: a new one shown once, the previous one signing for 24 hours', async () => {
    const made = await create(api.key, { url: 'https://hooks.example.com/rotate', types: ['*'] });
    const rotated = await send('POST', `${BASE}/${made.body.id}/rotate_secret`, api.key);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(made.body.secret);
    const expires = Date.parse(rotated.body.previous_secret_expires as string);
    expect(Math.abs(expires - (Date.now() + 24 * 3_600_000))).toBeLessThan(60_000);
  });

  it('deletes an endpoint', async () => {
    const made = await create(api.key, { url: 'https://hooks.example.com/gone', types: ['*'] });
    const deleted = await send('DELETE', `${BASE}/${made.body.id}`, api.key);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id: made.body.id, deleted: true });
    expect((await get(api.app, `${BASE}/${made.body.id}`, api.key)).status).toBe(404);
    expect((await send('DELETE', `${BASE}/${made.body.id}`, api.key)).status).toBe(404);
  });

  it('replays: after an event id, or from a time; anything else is a 400', async () => {
    const made = await create(api.key, { url: 'https://hooks.example.com/replay', types: ['*'] });
    const path = `${BASE}/${made.body.id}/replay`;
    const [first] = feed.add(3);
    const byId = await postJson(api.app, path, api.key, { after: first!.id });
    expect(byId.status).toBe(200);
    expect(byId.body).toMatchObject({ id: made.body.id, status: 'active' });
    const byTime = await postJson(api.app, path, api.key, {
      from: '2026-01-01T00:00:00Z',
      to: '2026-01-02T00:00:00Z',
    });
    expect(byTime.status).toBe(200);
    expect(byTime.body.replaying).toBe(true);
    for (const bad of [{}, { after: first!.id, from: '2026-01-01T00:00:00Z' }, { from: 'yesterday' }]) {
      const res = await postJson(api.app, path, api.key, bad);
      expect(res.status).toBe(400);
      expect(keysOf(res.body)).toEqual(['code', 'message']);
    }
    const backwards = await postJson(api.app, path, api.key, {
      from: '2026-01-02T00:00:00Z',
      to: '2026-01-01T00:00:00Z',
    });
    expect(backwards.body.message).toMatch(/to must be later than from/);
  });

  it('lists the latest requests made to an endpoint', async () => {
    const key = (await newAccount(api.t.db, 100)).api_key;
    const made = await create(key, { url: 'https://hooks.example.com/attempts', types: ['*'] });
    const events = feed.add(2);
    // A receiver answering without a network: delivery records what it sent.
    const client: ReceiverClient = {
      post: async () => ({ status: 202, retryAfterMs: null, body: '', durationMs: 7, error: null }),
      close: async () => undefined,
    };
    const id = await ownEndpointId(api.t.db, null, made.body.id as string);
    await deliverEndpoint({ db: api.t.db, feed, client }, id);
    const { status, body } = await get(api.app, `${BASE}/${made.body.id}/deliveries?limit=5`, key);
    expect(status).toBe(200);
    const deliveries = body.deliveries as Record<string, unknown>[];
    expect(deliveries.map((d) => d.event_ids)).toEqual([[events[1]!.id], [events[0]!.id]]);
    expect(deliveries[0]).toEqual({
      webhook_id: `msg_${events[1]!.id}`,
      event_ids: [events[1]!.id],
      attempted: expect.any(String),
      status: 202,
      error: null,
      duration_ms: 7,
      next_try: null,
    });
    const shown = await get(api.app, `${BASE}/${made.body.id}`, key);
    expect(shown.body).toMatchObject({ last_event_id: events[1]!.id, status: 'active' });
    expect((await get(api.app, `${BASE}/${made.body.id}/deliveries?limit=0`, key)).status).toBe(400);
  });

  it('documents every route in the OpenAPI document', async () => {
    const doc = (await api.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, unknown>>;
    };
    expect(Object.keys(doc.paths[BASE] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths[`${BASE}/{id}`] ?? {}).sort()).toEqual(['delete', 'get']);
    for (const p of ['rotate_secret', 'replay'])
      expect(Object.keys(doc.paths[`${BASE}/{id}/${p}`] ?? {})).toEqual(['post']);
    expect(Object.keys(doc.paths[`${BASE}/{id}/deliveries`] ?? {})).toEqual(['get']);
  });
});

describe('/v1/webhook_endpoints with WEBHOOKS_ALLOW_PRIVATE=on', () => {
  const redis = testQueuePrefix();
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await startTestApi({
      databaseUrl: api.t.url,
      prefix: redis.prefix,
      resolveHost,
      eventFeed: feed,
      env: { WEBHOOKS_ALLOW_PRIVATE: 'on' },
    });
  });
  afterAll(async () => {
    await app?.close();
    await redis.cleanup();
  });

  it('allows plain http and private receivers, never cloud metadata', async () => {
    const account = await newAccount(api.t.db, 100);
    const ok = await postJson(app, BASE, account.api_key, { url: 'http://127.0.0.1:9/hook', types: ['*'] });
    expect(ok.status).toBe(200);
    const named = await postJson(app, BASE, account.api_key, {
      url: 'http://ten.example.com/',
      types: ['*'],
    });
    expect(named.status).toBe(200);
    const metadata = await postJson(app, BASE, account.api_key, {
      url: 'http://metadata.example.com/',
      types: ['*'],
    });
    expect(metadata.status).toBe(400);
    expect(metadata.body.message).toMatch(/cloud-metadata/);
  });
});
