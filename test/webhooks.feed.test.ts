import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FeedEvent } from '../events/feed.read-model.js';
import { compareCursors, createEventFeed } from '../webhooks/feed.read-model.js';
import { SUFFIX } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { feedEvents } from './support/events.js';
import { importFeed } from './support/import.js';

/** The events feed as delivery reads it (webhooks/feed.read-model.ts), on real events. */
let t: TestDb;
let events: FeedEvent[];

beforeAll(async () => {
  t = await createTestDb();
  await importFeed(t.db, 'registrar', 'test/fixtures/registrar-small.csv');
  await importFeed(t.db, 'registrar', 'test/fixtures/registrar-small-changed-address.csv');
  events = await feedEvents(t.db);
});
afterAll(async () => {
  await t?.drop();
});

describe('the events feed for webhooks', () => {
  it('orders cursors as the feed does', () => {
    expect(events.length).toBeGreaterThan(10);
    for (let i = 1; i < events.length; i++) {
      expect(compareCursors(events[i - 1]!.id, events[i]!.id)).toBeLessThan(0);
      expect(compareCursors(events[i]!.id, events[i - 1]!.id)).toBeGreaterThan(0);
    }
    expect(compareCursors(null, events[0]!.id)).toBeLessThan(0);
    expect(compareCursors(events[0]!.id, events[0]!.id)).toBe(0);
    expect(compareCursors('10-5', '9-500')).toBeGreaterThan(0);
    expect(compareCursors('18446744073709551615-1', '18446744073709551614-9')).toBeGreaterThan(0);
    expect(() => compareCursors('x', '1-1')).toThrow(/event id/);
  });

  it('reads pages, filtered by type, and knows where it ends', async () => {
    const feed = createEventFeed(t.db, SUFFIX);
    expect(await feed.head()).toBe(events.at(-1)!.id);
    const page = await feed.read(null, 5, undefined);
    expect(page.events).toEqual(events.slice(0, 5));
    const orgs = await feed.read(null, 1_000, ['org.created', 'org.updated']);
    expect(orgs.events).toEqual(events.filter((e) => e.type === 'org.created' || e.type === 'org.updated'));
    expect(orgs.next_cursor).toBe(events.at(-1)!.id);
  });

  it('places a time in the feed: just before the first event created at or after it', async () => {
    const feed = createEventFeed(t.db, SUFFIX);
    const target = events[Math.floor(events.length / 2)]!;
    const at = new Date(target.created);
    const first = events.find((e) => new Date(e.created) >= at)!;
    const cursor = await feed.positionAt(at);
    const next = await feed.read(cursor, 1, undefined);
    expect(next.events[0]?.id).toBe(first.id);
    // Before every event: the oldest comes next; after every event: the feed's end.
    const before = await feed.positionAt(new Date(Date.parse(events[0]!.created) - 60_000));
    expect((await feed.read(before, 1, undefined)).events[0]?.id).toBe(events[0]!.id);
    expect(await feed.positionAt(new Date(Date.now() + 60_000))).toBe(events.at(-1)!.id);
  });
});
