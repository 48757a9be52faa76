import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  createEndpoint,
  type EndpointDeps,
  replayEndpoint,
  rotateEndpointSecret,
} from '../api/webhooks/webhook-endpoint.service.js';
import { type DeliveryDeps, deliverEndpoint } from '../webhooks/deliver.js';
import {
  acquireLease,
  disableDelivery,
  findDelivery,
  listAttempts,
  OPERATOR_DISABLED,
  recordSuccess,
} from '../webhooks/delivery.repository.js';
import { createReceiverClient, type ReceiverClient } from '../webhooks/receiver-client.js';
import { backoffMs, RETRY_POLICY } from '../webhooks/retry-policy.js';
import { newAccount, noDns } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { FakeFeed } from './support/fake-feed.js';
import { TestReceiver } from './support/receiver.js';

/**
 * The delivery state machine (webhooks/deliver.ts) against real Postgres and a real local receiver,
 * with the events feed in memory and a fake clock: retries over days run in milliseconds.
 */
let t: TestDb;
let accountId: number;
let client: ReceiverClient;
let feed: FakeFeed;
let receiver: TestReceiver;
let clock: Date;
const DAY = 86_400_000;

beforeAll(async () => {
  t = await createTestDb();
  const account = await newAccount(t.db);
  const row = await t.db
    .selectFrom('accounts')
    .select('id')
    .where('uid', '=', account.account_id.replace(/^acct_/, ''))
    .executeTakeFirstOrThrow();
  accountId = row.id;
  client = createReceiverClient({ allowPrivate: true });
});
afterAll(async () => {
  await client?.close();
  await t?.drop();
});
beforeEach(async () => {
  feed = new FakeFeed();
  receiver = await new TestReceiver().start();
  clock = new Date();
});
afterEach(async () => {
  await receiver.stop();
});

const deps = (): DeliveryDeps => ({ db: t.db, feed, client, now: () => clock, random: () => 0.5 });
const endpointDeps = (): EndpointDeps => ({
  db: t.db,
  feed,
  allowPrivate: true,
  maxEndpoints: 1_000,
  resolve: noDns,
  now: () => clock,
});

async function endpoint(options: { batch?: boolean; types?: string[] } = {}) {
  const created = await createEndpoint(endpointDeps(), accountId, {
    url: receiver.url,
    types: options.types ?? ['*'],
    batch: options.batch ?? false,
  });
  return { id: created.endpoint.id, secret: created.secret };
}

const advance = (ms: number) => {
  clock = new Date(clock.getTime() + ms);
};

describe('webhook delivery', () => {
  it('sends each event written after the endpoint was made, once, in feed order, signed', async () => {
    feed.add(3);
    const ep = await endpoint();
    const events = feed.add(5);
    const outcome = await deliverEndpoint(deps(), ep.id);
    expect(outcome).toEqual({ kind: 'caught-up', sent: 5 });
    expect(receiver.eventIds()).toEqual(events.map((e) => e.id));
    const verifier = new Webhook(ep.secret);
    receiver.requests.forEach((r, i) => {
      expect(r.headers['webhook-id']).toBe(`msg_${events[i]!.id}`);
      expect(verifier.verify(r.body, r.headers as Record<string, string>)).toEqual(events[i]);
    });
    const state = await findDelivery(t.db, ep.id);
    expect(state).toMatchObject({ after_event: events[4]!.id, status: 'active', lease_token: null });
    const attempts = await listAttempts(t.db, ep.id, 10);
    expect(attempts.map((a) => [a.status, a.event_ids])).toEqual(events.map((e) => [204, [e.id]]).reverse());
    expect(await deliverEndpoint(deps(), ep.id)).toEqual({ kind: 'caught-up', sent: 0 });
    expect(receiver.requests).toHaveLength(5);
  });

  it('batches up to 100 events a request as {"events": [...]}, in order', async () => {
    const ep = await endpoint({ batch: true });
    const events = feed.add(250);
    expect(await deliverEndpoint(deps(), ep.id)).toEqual({ kind: 'caught-up', sent: 3 });
    const bodies = receiver.requests.map((r) => JSON.parse(r.body) as { events: { id: string }[] });
    expect(bodies.map((b) => b.events.length)).toEqual([100, 100, 50]);
    expect(receiver.eventIds()).toEqual(events.map((e) => e.id));
    expect(receiver.requests[0]!.headers['webhook-id']).toBe(`msg_${events[0]!.id}_${events[99]!.id}`);
    for (const r of receiver.requests)
      new Webhook(ep.secret).verify(r.body, r.headers as Record<string, string>);
  });

  it('sends only the types asked for, and moves past the others', async () => {
    const ep = await endpoint({ types: ['location.*'] });
    feed.add(3, 'org.updated');
    const closed = feed.add(1, 'location.closed');
    feed.add(2, 'org.created');
    const created = feed.add(1, 'location.created');
    feed.add(4, 'org.left_register');
    expect(await deliverEndpoint(deps(), ep.id)).toEqual({ kind: 'caught-up', sent: 2 });
    expect(receiver.eventIds()).toEqual([closed[0]!.id, created[0]!.id]);
    expect((await findDelivery(t.db, ep.id))?.after_event).toBe(await feed.head());
  });

  it('retries a failed request with the same events and webhook-id, sending nothing after it meanwhile', async () => {
    const ep = await endpoint({ batch: true });
    const first = feed.add(30);
    receiver.answer = (_r, i) => ({ status: i === 0 ? 500 : 200, body: 'try later' });
    const failed = await deliverEndpoint(deps(), ep.id);
    expect(failed.kind).toBe('retry');
    const at = (failed as { at: Date }).at;
    expect(at.getTime() - clock.getTime()).toBe(backoffMs(1));
    const state = await findDelivery(t.db, ep.id);
    expect(state).toMatchObject({
      status: 'failing',
      failures: 1,
      pending_last: first[29]!.id,
      after_event: null,
    });
    expect(state?.last_error).toBe('answered 500: try later');

    const second = feed.add(30);
    // Not due yet: nothing is sent.
    expect(await deliverEndpoint(deps(), ep.id)).toEqual({ kind: 'retry', at, sent: 0 });
    expect(receiver.requests).toHaveLength(1);
    clock = at;
    expect(await deliverEndpoint(deps(), ep.id)).toEqual({ kind: 'caught-up', sent: 2 });
    const [r0, r1, r2] = receiver.requests;
    expect(r1!.body).toBe(r0!.body);
    expect(r1!.headers['webhook-id']).toBe(r0!.headers['webhook-id']);
    expect((JSON.parse(r2!.body) as { events: unknown[] }).events).toEqual(second);
    expect(await findDelivery(t.db, ep.id)).toMatchObject({
      status: 'active',
      failures: 0,
      pending_last: null,
    });
  });

  it('backs off with jitter for 5 days, marked failing, then disables the endpoint', async () => {
    const ep = await endpoint();
    feed.add(2);
    receiver.answer = () => ({ status: 502 });
    const started = clock.getTime();
    const gaps: number[] = [];
    const jittered: DeliveryDeps = { ...deps(), random: () => (gaps.length % 2 === 0 ? 0 : 0.999) };
    for (let i = 0; i < 100; i++) {
      const outcome = await deliverEndpoint(jittered, ep.id);
      if (outcome.kind === 'stopped') break;
      expect(outcome.kind).toBe('retry');
      const at = (outcome as { at: Date }).at.getTime();
      gaps.push(at - clock.getTime());
      expect((await findDelivery(t.db, ep.id))?.status).toBe('failing');
      clock = new Date(at);
    }
    const state = await findDelivery(t.db, ep.id);
    expect(state).toMatchObject({ status: 'disabled', disabled_reason: 'no successful delivery for 5 days' });
    // The last try was at the 5-day mark; every try carried the first event.
    expect(clock.getTime() - started).toBe(RETRY_POLICY.giveUpAfterMs);
    expect(clock.getTime() - started).toBeGreaterThanOrEqual(3 * DAY);
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
    // Each wait is the backoff ±20 % (the last one cut at the deadline).
    gaps.slice(0, -1).forEach((gap, i) => {
      const base = backoffMs(i + 1);
      expect(gap).toBeGreaterThanOrEqual(Math.floor(base * 0.8));
      expect(gap).toBeLessThanOrEqual(Math.ceil(base * 1.2));
    });
    expect(gaps[0]).toBe(backoffMs(1) * 0.8);
    expect(gaps[1]).toBeGreaterThan(backoffMs(2) * 1.19);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(RETRY_POLICY.maxDelayMs * 1.2);
    expect(receiver.requests.length).toBe(gaps.length + 1);
    // Disabled: nothing more is sent.
    advance(DAY);
    expect((await deliverEndpoint(deps(), ep.id)).kind).toBe('stopped');
    expect(receiver.requests.length).toBe(gaps.length + 1);
  });

  it('honours Retry-After on 429 and 503', async () => {
    const ep = await endpoint();
    feed.add(1);
    receiver.answer = () => ({ status: 429, headers: { 'retry-after': '120' } });
    const a = await deliverEndpoint(deps(), ep.id);
    expect((a as { at: Date }).at.getTime() - clock.getTime()).toBe(120_000);
    advance(120_000);
    // An HTTP date an hour after the answer (the receiver's clock is the real one).
    receiver.answer = () => ({
      status: 503,
      headers: { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() },
    });
    const b = await deliverEndpoint(deps(), ep.id);
    const wait = (b as { at: Date }).at.getTime() - clock.getTime();
    expect(Math.abs(wait - 3_600_000)).toBeLessThan(2_000);
    const attempts = await listAttempts(t.db, ep.id, 5);
    expect(attempts.map((x) => x.status)).toEqual([503, 429]);
  });

  it('disables an endpoint whose receiver answers 410 Gone, and counts a redirect as a failure', async () => {
    const gone = await endpoint();
    feed.add(1);
    receiver.answer = () => ({ status: 410 });
    expect(await deliverEndpoint(deps(), gone.id)).toMatchObject({ kind: 'stopped' });
    expect(await findDelivery(t.db, gone.id)).toMatchObject({
      status: 'disabled',
      disabled_reason: 'the receiver answered 410 Gone',
    });
    const moved = await endpoint();
    feed.add(1);
    receiver.answer = () => ({ status: 301, headers: { location: 'http://127.0.0.1:1/' } });
    expect((await deliverEndpoint(deps(), moved.id)).kind).toBe('retry');
    expect((await findDelivery(t.db, moved.id))?.last_error).toMatch(
      /301 \(answered 301: redirects are not followed\)/,
    );
  });

  it('lets one worker at a time deliver to an endpoint; a lapsed lease is taken over, its writes refused', async () => {
    const ep = await endpoint();
    feed.add(3);
    receiver.answer = () => ({ status: 200, delayMs: 150 });
    const [a, b] = await Promise.all([deliverEndpoint(deps(), ep.id), deliverEndpoint(deps(), ep.id)]);
    expect([a.kind, b.kind].sort()).toEqual(['busy', 'caught-up']);
    expect(receiver.eventIds()).toEqual(feed.events.map((e) => e.id));

    // A worker that took the lease and died: others wait for it to lapse, then take over.
    feed.add(1);
    expect(await acquireLease(t.db, ep.id, '00000000-0000-4000-8000-000000000001', clock)).toBeDefined();
    expect((await deliverEndpoint(deps(), ep.id)).kind).toBe('busy');
    advance(61_000);
    expect(await deliverEndpoint(deps(), ep.id)).toEqual({ kind: 'caught-up', sent: 1 });
    const attempt = {
      webhookId: 'msg_x',
      eventIds: ['1-1'],
      attemptedAt: clock,
      status: 200,
      error: null,
      durationMs: 1,
      nextAttemptAt: null,
    };
    const stale = { endpointId: ep.id, token: '00000000-0000-4000-8000-000000000001' };
    expect(await recordSuccess(t.db, stale, [attempt], '1-1', clock)).toBe(false);
    expect((await findDelivery(t.db, ep.id))?.after_event).toBe(await feed.head());
  });

  it('signs with the previous secret too for 24 hours after a rotation', async () => {
    const ep = await endpoint();
    const rotated = await rotateEndpointSecret(endpointDeps(), ep.id);
    expect(rotated.secret).not.toBe(ep.secret);
    feed.add(1);
    await deliverEndpoint(deps(), ep.id);
    const during = receiver.requests[0]!;
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    new Webhook(ep.secret).verify(during.body, during.headers as Record<string, string>);
    new Webhook(rotated.secret).verify(during.body, during.headers as Record<string, string>);

    advance(24 * 3_600_000 + 1_000);
    feed.add(1);
    await deliverEndpoint(deps(), ep.id);
    const after = receiver.requests[1]!;
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    // The verifier checks the timestamp against its own clock: set to the fake one.
    vi.setSystemTime(clock);
    try {
      const headers = after.headers as Record<string, string>;
      expect(new Webhook(rotated.secret).verify(after.body, headers)).toBeDefined();
      expect(() => new Webhook(ep.secret).verify(after.body, headers)).toThrow(/No matching signature/);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('webhook replay', () => {
  it('sends again every event after an event id, with the same webhook-ids', async () => {
    const ep = await endpoint();
    const events = feed.add(6);
    await deliverEndpoint(deps(), ep.id);
    await replayEndpoint(endpointDeps(), ep.id, { after: events[2]!.id });
    expect(await deliverEndpoint(deps(), ep.id)).toEqual({ kind: 'caught-up', sent: 3 });
    expect(receiver.eventIds()).toEqual([...events, ...events.slice(3)].map((e) => e.id));
    expect(receiver.requests[6]!.headers['webhook-id']).toBe(receiver.requests[3]!.headers['webhook-id']);
  });

  it('sends a time range again, then goes on where delivery stood', async () => {
    const ep = await endpoint({ batch: true });
    const t0 = clock.getTime();
    const early = feed.add(3, 'org.created', new Date(t0 - 3 * DAY));
    const middle = feed.add(4, 'org.updated', new Date(t0 - 2 * DAY));
    const late = feed.add(2, 'org.updated', new Date(t0 - DAY));
    await deliverEndpoint(deps(), ep.id);
    expect(receiver.eventIds()).toHaveLength(9);
    const row = await replayEndpoint(endpointDeps(), ep.id, {
      from: new Date(t0 - 2.5 * DAY),
      to: new Date(t0 - 1.5 * DAY),
    });
    expect(row.replay_from).not.toBeNull();
    const fresh = feed.add(1);
    expect(await deliverEndpoint(deps(), ep.id)).toEqual({ kind: 'caught-up', sent: 2 });
    expect(receiver.eventIds().slice(9)).toEqual([...middle, ...fresh].map((e) => e.id));
    expect(await findDelivery(t.db, ep.id)).toMatchObject({
      after_event: fresh[0]!.id,
      replay_until: null,
      replay_resume: null,
      replay_from: null,
    });
    expect(early.length + late.length).toBe(5);
  });

  it('never moves an endpoint forward, enables one its failures disabled, and refuses one an operator disabled', async () => {
    const ep = await endpoint();
    const events = feed.add(4);
    receiver.answer = () => ({ status: 410 });
    await deliverEndpoint(deps(), ep.id);
    expect((await findDelivery(t.db, ep.id))?.status).toBe('disabled');
    // A replay "after" the last event would skip the four never delivered: the cursor stays.
    const row = await replayEndpoint(endpointDeps(), ep.id, { after: events[3]!.id });
    expect(row).toMatchObject({ status: 'active', after_event: null });
    receiver.answer = () => ({ status: 204 });
    expect(await deliverEndpoint(deps(), ep.id)).toEqual({ kind: 'caught-up', sent: 4 });

    await disableDelivery(t.db, ep.id, OPERATOR_DISABLED, clock);
    await expect(replayEndpoint(endpointDeps(), ep.id, { after: events[0]!.id })).rejects.toMatchObject({
      statusCode: 409,
    });
  });

  it('takes the lease away from a delivery under way', async () => {
    const ep = await endpoint();
    const events = feed.add(3);
    receiver.answer = () => ({ status: 200, delayMs: 100 });
    const running = deliverEndpoint(deps(), ep.id);
    await new Promise((r) => setTimeout(r, 50));
    await replayEndpoint(endpointDeps(), ep.id, { after: events[0]!.id });
    expect(await running).toMatchObject({ kind: 'stopped', reason: 'lease lost' });
    expect(await deliverEndpoint(deps(), ep.id)).toMatchObject({ kind: 'caught-up' });
    expect(receiver.eventIds().slice(-2)).toEqual(events.slice(1).map((e) => e.id));
  });
});
