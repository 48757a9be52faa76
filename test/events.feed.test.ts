import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { comparePositions, decodeCursor } from '../events/event-cursor.js';
import {
  ExpiredCursorError,
  encodeCursor,
  type FeedEvent,
  latestVisible,
  readEvents,
} from '../events/feed.read-model.js';
import { deleteOldestEvents, pruneEvents } from '../events/retention.repository.js';
import { startWorkers } from '../jobs/worker.js';
import { createRedis } from '../shared/redis.js';
import { createEventFeed } from '../webhooks/feed.read-model.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_PG_ADMIN_URL, TEST_REDIS_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';
import { rng as seeded } from './support/rng.js';
import { eventually, sleep } from './support/wait.js';
import { inProcessWorkerDeps } from './support/worker.js';

/**
 * The feed's guarantee (docs/events.md): a reader paging with cursors never reads an event twice and
 * never skips one, whatever order the writing transactions commit in; and retention deletes the
 * oldest events and answers 410 to a cursor that lost some.
 */
let t: TestDb;

beforeAll(async () => {
  t = await createTestDb();
});

afterAll(async () => {
  await t?.drop();
});

const SUFFIX = 'bizdir.test';
const read = (after: string | null, limit: number, filter = {}) =>
  readEvents(t.db, after, limit, filter, { domainSuffix: SUFFIX });

async function connect(url = t.url): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

/** An import-like event written straight into the table (the triggers' job, done by hand here). */
const insertEvent = (client: pg.Client, label: string) =>
  client.query(
    `insert into events (type, data) values ('import.started', jsonb_build_object('label', $1::text))`,
    [label],
  );

describe('no gaps under concurrent writers', () => {
  it('readers paging with cursors see every committed event once, in order, none rolled back', async () => {
    const rng = seeded(48);
    const WRITERS = 6;
    const TRANSACTIONS = 12;
    const committed = new Set<string>();
    const rolledBack = new Set<string>();
    let writing = true;

    // Each writer: transactions that take their id early, write a few events with pauses (some of
    // them long), and commit or roll back: commits land out of the order of their transaction ids.
    const writer = async (w: number) => {
      const client = await connect();
      try {
        for (let i = 0; i < TRANSACTIONS; i++) {
          await client.query('begin');
          const labels: string[] = [];
          const events = 1 + Math.floor(rng() * 4);
          for (let e = 0; e < events; e++) {
            const label = `w${w}-t${i}-e${e}`;
            await insertEvent(client, label);
            labels.push(label);
            await sleep(rng() < 0.15 ? 300 + rng() * 700 : rng() * 30);
          }
          if (rng() < 0.15) {
            await client.query('rollback');
            for (const l of labels) rolledBack.add(l);
          } else {
            await client.query('commit');
            for (const l of labels) committed.add(l);
          }
        }
      } finally {
        await client.end();
      }
    };

    // Each reader pages on from its cursor until the writers are done and it has caught up.
    const reader = async (limit: number, filter = {}) => {
      const seen: FeedEvent[] = [];
      let cursor: string | null = null;
      for (;;) {
        const done = !writing;
        const page = await read(cursor, limit, filter);
        seen.push(...page.events);
        cursor = page.next_cursor;
        if (done && !page.has_more) return seen;
        if (!page.has_more) await sleep(rng() * 40);
      }
    };

    const writers = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    const readers = Promise.all([
      reader(1),
      reader(3),
      reader(7),
      reader(50),
      reader(2, { types: ['import.*'] }),
    ]);
    await writers;
    writing = false;
    const results = await readers;

    expect(committed.size).toBeGreaterThan(100);
    for (const seen of results) {
      const labels = seen.map((e) => e.data.label as string);
      // Exactly the committed events, each once...
      expect(new Set(labels).size).toBe(labels.length);
      expect([...labels].sort()).toEqual([...committed].sort());
      expect(labels.filter((l) => rolledBack.has(l))).toEqual([]);
      // ...in feed order, and each transaction's events in the order it wrote them.
      for (let i = 1; i < seen.length; i++) {
        expect(comparePositions(decodeCursor(seen[i - 1]!.id), decodeCursor(seen[i]!.id))).toBeLessThan(0);
      }
      const order = (l: string) => Number(l.split('-e')[1]);
      for (const [i, l] of labels.entries()) {
        if (order(l) > 0) expect(labels.indexOf(l.replace(/-e\d+$/, `-e${order(l) - 1}`))).toBeLessThan(i);
      }
    }
  }, 120_000);
});

describe('the horizon', () => {
  it('a transaction of this database that has written holds the feed back until it ends; one of another database does not', async () => {
    const before = await read(null, 1000);
    const blocker = await connect();
    const elsewhere = await connect(TEST_PG_ADMIN_URL);
    const writer = await connect();
    try {
      // A transaction of another database with an id (and one of this database, later) open...
      await elsewhere.query('begin');
      await elsewhere.query('select pg_current_xact_id()');
      await insertEvent(writer, 'past another database');
      const after = await read(before.next_cursor, 1000);
      expect(after.events.map((e) => e.data.label)).toEqual(['past another database']);

      await blocker.query('begin');
      await blocker.query('select pg_current_xact_id()');
      await insertEvent(writer, 'behind a transaction of this database');
      // ...the later event is committed but not visible: an event of the open transaction could
      // still come before it.
      const held = await read(after.next_cursor, 1000);
      expect(held).toEqual({ events: [], next_cursor: after.next_cursor, has_more: false });
      await blocker.query('commit');
      const released = await read(after.next_cursor, 1000);
      expect(released.events.map((e) => e.data.label)).toEqual(['behind a transaction of this database']);
    } finally {
      await elsewhere.query('rollback');
      await Promise.all([blocker.end(), elsewhere.end(), writer.end()]);
    }
  });

  it('a reader inside a transaction that has written never sees its own uncommitted events', async () => {
    const client = await connect();
    try {
      const before = await read(null, 1000);
      await client.query('begin');
      await insertEvent(client, 'mine, not yet committed');
      const { rows } = await client.query<{ n: number }>(
        'select count(*)::int as n from events where xid < bizdir_events_horizon()',
      );
      const { rows: all } = await client.query<{ n: number }>('select count(*)::int as n from events');
      expect(rows[0]!.n).toBe(all[0]!.n - 1);
      await client.query('rollback');
      expect((await read(before.next_cursor, 1000)).events).toEqual([]);
    } finally {
      await client.end();
    }
  });
});

describe('filters and bounded scans', () => {
  it('a filtered read scans at most scanLimit events and moves its cursor past them', async () => {
    const writer = await connect();
    try {
      const start = (await read(null, 1000)).next_cursor;
      await writer.query(`insert into events (type, data)
        select 'import.started', jsonb_build_object('label', 'filler ' || g) from generate_series(1, 30) g`);
      await writer.query(`insert into events (type, data) values ('import.completed', '{"label": "rare"}')`);
      const first = await readEvents(t.db, start, 10, { types: ['import.completed'] }, { scanLimit: 20 });
      expect(first.events).toEqual([]);
      expect(first.has_more).toBe(true);
      expect(comparePositions(decodeCursor(first.next_cursor!), decodeCursor(start!))).toBeGreaterThan(0);
      const second = await readEvents(
        t.db,
        first.next_cursor,
        10,
        { types: ['import.completed'] },
        { scanLimit: 20 },
      );
      expect(second.events.map((e) => e.data.label)).toEqual(['rare']);
      expect(second.has_more).toBe(false);
      // Unfiltered, the same read is a plain page.
      const plain = await read(start, 10);
      expect(plain.events).toHaveLength(10);
      expect(plain.has_more).toBe(true);
    } finally {
      await writer.end();
    }
  });

  it('refuses a malformed cursor and an unknown type (400)', async () => {
    for (const after of [
      '',
      'abc',
      '12',
      '1-2-3',
      '-1-2',
      '1-',
      '99999999999999999999999-1',
      '1-99999999999999999999',
    ])
      await expect(read(after, 10)).rejects.toMatchObject({ statusCode: 400 });
    await expect(read(null, 10, { types: ['org.nope'] })).rejects.toMatchObject({ statusCode: 400 });
    await expect(read(null, 10, { types: ['nope.*'] })).rejects.toMatchObject({ statusCode: 400 });
  });
});

describe('retention', () => {
  it('deletes the oldest events in feed order, in batches; a cursor before the last deleted is 410', async () => {
    const writer = await connect();
    try {
      await writer.query('delete from events');
      await writer.query(`insert into events (type, data, created)
        select 'import.started', jsonb_build_object('label', 'old ' || g), now() - interval '50 days'
        from generate_series(1, 25) g`);
      await writer.query(`insert into events (type, data, created)
        values ('import.started', '{"label": "new"}', now() - interval '1 day')`);
      await writer.query(`insert into events (type, data, created)
        values ('import.started', '{"label": "old, but after a newer one"}', now() - interval '50 days')`);
      const all = await read(null, 1000);
      expect(all.events).toHaveLength(27);

      // A cutoff before everything deletes nothing.
      expect(await deleteOldestEvents(t.db, new Date(Date.now() - 60 * 86_400_000), 10)).toBe(0);
      const outcome = await pruneEvents(t.db, { retentionDays: 45, batchSize: 10 });
      // The 25 old ones, 10 at a time; the old event after a newer one waits for it (the events
      // kept are always the feed from some point on).
      expect(outcome).toEqual({ deleted: 25, batches: 3 });
      const kept = await read(null, 1000);
      expect(kept.events.map((e) => e.data.label)).toEqual(['new', 'old, but after a newer one']);

      const lastDeleted = all.events[24]!.id;
      await expect(read(all.events[0]!.id, 10)).rejects.toBeInstanceOf(ExpiredCursorError);
      await expect(read(all.events[23]!.id, 10)).rejects.toMatchObject({
        statusCode: 410,
        reason: expect.stringMatching(/without `after`/),
      });
      // At the last deleted event nothing was lost: the page goes on from there.
      expect((await read(lastDeleted, 10)).events.map((e) => e.data.label)).toEqual([
        'new',
        'old, but after a newer one',
      ]);
      const { rows } = await sql<{ mark: string }>`
        select deleted_xid::text || '-' || deleted_seq as mark from events_retention`.execute(t.db);
      expect(rows).toEqual([{ mark: lastDeleted }]);
    } finally {
      await writer.end();
    }
  });
});

describe('the prune-events job', () => {
  it('a worker of the events queue schedules it and deletes events older than EVENTS_RETENTION_DAYS', async () => {
    const writer = await connect();
    const queue = testQueuePrefix();
    const connection = createRedis(TEST_REDIS_URL, 'worker');
    try {
      await writer.query('delete from events');
      await writer.query(`insert into events (type, data, created) values
        ('import.started', '{"label": "ten days old"}', now() - interval '10 days'),
        ('import.started', '{"label": "three days old"}', now() - interval '3 days')`);
      const deps = inProcessWorkerDeps(t, queue.prefix, connection, { EVENTS_RETENTION_DAYS: '7' });
      const workers = startWorkers(deps, {
        queues: ['events'],
      });
      try {
        const labels = await eventually(
          async () => (await read(null, 10)).events.map((e) => e.data.label),
          (seen) => seen.length === 1,
        );
        expect(labels).toEqual(['three days old']);
      } finally {
        await workers.close();
      }
    } finally {
      connection.disconnect();
      await queue.cleanup();
      await writer.end();
    }
  }, 60_000);
});

describe('feed order across a change in the number of digits of a transaction id', () => {
  it('the feed head, a long poll and a replay by time order xid 1000 after 999 (not as text)', async () => {
    const own = await createTestDb();
    try {
      // Transaction ids as a long-lived database passes 999 → 1000 (both long ended, so visible).
      await sql`
        insert into events (xid, type, data, created) values
          ('5', 'import.started', '{"label":"older"}', now() - interval '3 minutes'),
          ('999', 'import.started', '{"label":"before"}', now() - interval '1 minute'),
          ('1000', 'import.started', '{"label":"after"}', now() - interval '1 minute')`.execute(own.db);
      const head = await latestVisible(own.db);
      expect(head?.xid).toBe('1000');
      const feed = createEventFeed(own.db, SUFFIX);
      expect(await feed.head()).toBe(encodeCursor(head!));
      // Delivery's view: an endpoint that stands after 999's event is behind the head.
      expect(feed.compare(encodeCursor({ xid: '999', seq: head!.seq - 1 }), await feed.head())).toBeLessThan(
        0,
      );
      // A replay from two minutes ago starts just before 999's event: both it and 1000's are sent.
      const at = await feed.positionAt(new Date(Date.now() - 120_000));
      const page = await readEvents(own.db, at, 10, {}, { domainSuffix: SUFFIX });
      expect(page.events.map((e) => decodeCursor(e.id).xid)).toEqual(['999', '1000']);
    } finally {
      await own.drop();
    }
  });
});
