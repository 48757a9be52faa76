import type { Redis } from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint, type EndpointDeps } from '../api/webhooks/webhook-endpoint.service.js';
import { createWorkerDeps, type RunningWorkers, startWorkers } from '../jobs/worker.js';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { createRedis } from '../shared/redis.js';
import { findDelivery } from '../webhooks/delivery.repository.js';
import { createEventFeed } from '../webhooks/feed.read-model.js';
import { newAccount, noDns, SUFFIX } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { feedEvents } from './support/events.js';
import { importFeed } from './support/import.js';
import { TestReceiver } from './support/receiver.js';
import { testQueuePrefix } from './support/redis.js';
import { eventually } from './support/wait.js';
import { QUICK_TAKEOVER, WorkerProcesses } from './support/worker.js';

/**
 * Webhooks end to end: records imported, their events read from the real feed by the real workers
 * (in this process, and as `bizdir worker` processes killed mid-request), delivered to local
 * receivers (WEBHOOKS_ALLOW_PRIVATE=on).
 */
let t: TestDb;
let queue: ReturnType<typeof testQueuePrefix>;
let accountId: number;
const receivers: TestReceiver[] = [];
const env = () => ({
  DATABASE_URL: t.url,
  REDIS_URL: TEST_REDIS_URL,
  QUEUE_PREFIX: queue.prefix,
  WEBHOOKS_ALLOW_PRIVATE: 'on',
});
const workers = new WorkerProcesses(env);

const endpointDeps = (): EndpointDeps => ({
  db: t.db,
  feed: createEventFeed(t.db, SUFFIX),
  allowPrivate: true,
  maxEndpoints: 100,
  resolve: noDns,
  now: () => new Date(),
});

async function receiver(): Promise<TestReceiver> {
  const r = await new TestReceiver().start();
  receivers.push(r);
  return r;
}

beforeAll(async () => {
  t = await createTestDb();
  queue = testQueuePrefix();
  const account = await newAccount(t.db);
  const row = await t.db
    .selectFrom('accounts')
    .select('id')
    .where('uid', '=', account.account_id.replace(/^acct_/, ''))
    .executeTakeFirstOrThrow();
  accountId = row.id;
});

afterAll(async () => {
  await workers.stopAll();
  for (const r of receivers) await r.stop();
  await queue?.cleanup();
  await t?.drop();
});

describe('webhook workers', () => {
  it('deliver an import’s events from the feed, in order, batched or one by one, filtered by type', async () => {
    const all = await receiver();
    const orgs = await receiver();
    const batched = await createEndpoint(endpointDeps(), accountId, {
      url: all.url,
      types: ['*'],
      batch: true,
    });
    const single = await createEndpoint(endpointDeps(), accountId, { url: orgs.url, types: ['org.*'] });
    const mark = batched.endpoint.after_event;
    await importFeed(t.db, 'registrar', 'test/fixtures/registrar-small.csv');
    const expected = await feedEvents(t.db, {}, mark);
    const expectedOrgs = expected.filter((e) => e.type.startsWith('org.'));
    expect(expectedOrgs.length).toBeGreaterThan(5);

    const config = loadConfig({
      DATABASE_URL: t.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: queue.prefix,
      LOG_LEVEL: 'silent',
      WEBHOOKS_ALLOW_PRIVATE: 'on',
    });
    const connection: Redis = createRedis(TEST_REDIS_URL, 'worker');
    let running: RunningWorkers | undefined;
    try {
      running = startWorkers(createWorkerDeps(config, t.db, connection, createLogger(config)), {
        queues: ['webhooks'],
      });
      const done = await eventually(
        async () => all.eventIds().length >= expected.length && orgs.eventIds().length >= expectedOrgs.length,
        { timeoutMs: 30_000 },
      );
      expect(done).toBe(true);
    } finally {
      await running?.close();
      connection.disconnect();
    }
    expect(all.eventIds()).toEqual(expected.map((e) => e.id));
    expect(orgs.eventIds()).toEqual(expectedOrgs.map((e) => e.id));
    for (const r of all.requests)
      new Webhook(batched.secret).verify(r.body, r.headers as Record<string, string>);
    for (const r of orgs.requests)
      new Webhook(single.secret).verify(r.body, r.headers as Record<string, string>);
    expect(JSON.parse(orgs.requests[0]!.body)).toEqual(expectedOrgs[0]);
    const last = expected.at(-1)!.id;
    expect((await findDelivery(t.db, batched.endpoint.id))?.after_event).toBe(last);
    // The org.* endpoint moved past the events it does not take, up to the same place.
    expect((await findDelivery(t.db, single.endpoint.id))?.after_event).toBe(last);
  }, 60_000);

  it('lose nothing when a worker is killed mid-request and Redis loses its data', async () => {
    const r = await receiver();
    const made = await createEndpoint(endpointDeps(), accountId, { url: r.url, types: ['*'] });
    const mark = made.endpoint.after_event;
    await importFeed(t.db, 'registrar', 'test/fixtures/registrar-small-changed-address.csv');
    const expected = (await feedEvents(t.db, {}, mark)).map((e) => e.id);
    expect(expected.length).toBeGreaterThan(2);

    const worker = () => workers.start(['--queues', 'webhooks', ...QUICK_TAKEOVER]);
    // The first request is never answered: the worker sending it is killed meanwhile.
    let hung!: () => void;
    const firstArrived = new Promise<void>((resolve) => {
      hung = resolve;
    });
    r.answer = (_req, i) => {
      if (i === 0) {
        hung();
        return { status: 200, delayMs: 60_000 };
      }
      return { status: 204 };
    };
    const first = worker();
    await firstArrived;
    await workers.stop(first, 'SIGKILL');
    // Redis loses everything this test's queue held (the killed worker's job with it).
    await queue.cleanup();
    worker();
    // The endpoint's lease (held by the dead worker) lapses, the sweep enqueues it again.
    const done = await eventually(async () => r.eventIds().length >= expected.length + 1, {
      timeoutMs: 60_000,
    });
    expect(done).toBe(true);
    const ids = r.eventIds();
    // At least once: the unanswered event again, with the same webhook-id, then the rest in order.
    expect(ids[0]).toBe(expected[0]);
    expect(ids.slice(1)).toEqual(expected);
    expect(r.requests[1]!.headers['webhook-id']).toBe(r.requests[0]!.headers['webhook-id']);
    expect((await findDelivery(t.db, made.endpoint.id))?.after_event).toBe(expected.at(-1));
  }, 90_000);
});
