import { sql } from 'kysely';
import { decodeCursor, encodeCursor, latestVisible, readEvents } from '../events/feed.read-model.js';
import type { Db } from '../shared/db.js';
import type { EventFeed } from './event-feed.js';

/**
 * The events feed as delivery reads it: the events read model (EVENTS-CONTRACT.md), plus where a
 * time falls in the feed, for replays asked by time.
 */
export function createEventFeed(db: Db, domainSuffix: string): EventFeed {
  return {
    read: (after, limit, types) =>
      readEvents(db, after, limit, types === undefined ? {} : { types }, { domainSuffix }),
    head: async () => {
      const last = await latestVisible(db);
      return last === null ? null : encodeCursor(last);
    },
    positionAt: (time) => positionAt(db, time),
    compare: compareCursors,
  };
}

/** Feed order of two cursors; null (before every event) first. Throws a 400 on a malformed one. */
export function compareCursors(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  const x = decodeCursor(a);
  const y = decodeCursor(b);
  const byXid = BigInt(x.xid) - BigInt(y.xid);
  if (byXid !== 0n) return byXid < 0n ? -1 : 1;
  return x.seq - y.seq;
}

/**
 * The cursor just before the first visible event (in feed order) created at or after `time`, so
 * that every event created since is sent again; the feed's end when there is none. Feed order is
 * by transaction, so a few events created before `time` may come along. The scan walks the feed from
 * its oldest event kept: a worker runs it (no statement timeout), once per replay. The order names
 * the column (`e.xid`), not the text output alias, so '1000' sorts after '999'.
 */
async function positionAt(db: Db, time: Date): Promise<string | null> {
  const { rows } = await sql<{ xid: string; seq: number }>`
    select e.xid::text as xid, e.seq from events e
    where e.xid < bizdir_events_horizon() and e.created >= ${time}
    order by e.xid, e.seq limit 1`.execute(db);
  const first = rows[0];
  if (first) return encodeCursor({ xid: first.xid, seq: Number(first.seq) - 1 });
  const last = await latestVisible(db);
  return last === null ? null : encodeCursor(last);
}
