import { sql } from 'kysely';
import { loadConfig } from '../shared/config.js';
import type { Db } from '../shared/db.js';
import { type EventRow, type FeedEvent, toFeedEvent } from './event.view.js';
import {
  comparePositions,
  decodeCursor,
  ExpiredCursorError,
  encodeCursor,
  FEED_START,
  type FeedPosition,
} from './event-cursor.js';
import { expandTypes } from './event-types.js';

export type { FeedEvent } from './event.view.js';
export { decodeCursor, ExpiredCursorError, encodeCursor } from './event-cursor.js';
export { EVENT_TYPES, type EventType, expandTypes } from './event-types.js';

/** Which events a read keeps: types (exact, or `org.*` patterns) and the Orgs they are about. */
export interface EventFilter {
  types?: readonly string[];
  orgIds?: readonly number[];
}

export interface EventPage {
  events: FeedEvent[];
  /** Where the next read starts: after the last event scanned (matching the filter or not). */
  next_cursor: string | null;
  /** More events may be visible after next_cursor now (false: the reader has caught up). */
  has_more: boolean;
}

export interface ReadOptions {
  /** DOMAIN_SUFFIX of the rendered domains; default: the process's configuration. */
  domainSuffix?: string;
  /**
   * A filtered read looks at no more than this many events (matching or not), so a rare type costs
   * a bounded scan: it answers the matches it found, `next_cursor` after the last event it looked at
   * and `has_more` true, and the next read goes on from there.
   */
  scanLimit?: number;
  /** EVENTS_RETENTION_DAYS, for the 410's message. */
  retentionDays?: number;
}

export const MAX_PAGE = 1_000;
export const DEFAULT_SCAN_LIMIT = 10_000;

let configuredSuffix: string | undefined;
const defaultSuffix = () => {
  configuredSuffix ??= loadConfig().domainSuffix;
  return configuredSuffix;
};

interface Row extends EventRow {
  kind: 'f' | 'e';
  hit: boolean;
  last_row: boolean;
  rn: number;
}

/**
 * A page of the feed after `after` (a cursor; null: from the oldest event kept), in feed order
 * (xid, seq). Only events below the horizon are visible (bizdir_events_horizon, migration 0025:
 * every transaction of this database below it has ended), so no event can later appear before one
 * this read served, and a reader that pages on from `next_cursor` never skips or repeats one. A long
 * writing transaction in this database holds the feed back until it ends; it never reorders it.
 *
 * One statement, so one snapshot: the retention mark and the events are read together (a cursor
 * before the last event retention deleted is 410, ExpiredCursorError; one at or after it lost
 * nothing). The scan reads events in order and stops at the page's last match plus one (to know
 * whether there is more) or at the scan limit; the last event it read comes back too, marked
 * (`last_row`, one row of look-ahead), so a filtered page still moves the cursor past what it skipped.
 */
export async function readEvents(
  db: Db,
  after: string | null,
  limit: number,
  filter: EventFilter = {},
  options: ReadOptions = {},
): Promise<EventPage> {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)
    throw new RangeError(`readEvents: limit must be 1-${MAX_PAGE}`);
  const from = after === null ? FEED_START : decodeCursor(after);
  const types = filter.types && filter.types.length > 0 ? expandTypes(filter.types) : null;
  const orgIds = filter.orgIds ? [...filter.orgIds] : null;
  const filtered = types !== null || orgIds !== null;
  const scan = filtered ? Math.max(limit + 1, options.scanLimit ?? DEFAULT_SCAN_LIMIT) : limit + 1;
  // The scan carries only what the filter reads; the page's events are then read from where the scan
  // found them (by ctid: one heap page each, no index descent; the statement's snapshot keeps the
  // versions it saw where they are).
  const { rows } = await sql<Row>`
    select 'f' as kind, deleted_xid::text as xid, deleted_seq as seq, null as type, null as created,
      null as org_id, null as data, false as hit, false as last_row, 0 as rn
    from events_retention
    union all
    (select 'e', p.xid::text, p.seq, e.type, e.created, e.org_id, e.data, p.hit, p.last_row, p.rn from (
      select w.* from (
        select s.ctid, s.xid, s.seq,
          (${types}::text[] is null or s.type = any(${types}::text[]))
            and (${orgIds}::bigint[] is null or s.org_id = any(${orgIds}::bigint[])) as hit,
          lead(s.seq) over w is null as last_row,
          row_number() over w as rn
        from (
          select ctid, xid, seq, type, org_id from events
          where xid < bizdir_events_horizon()
            and (xid, seq) > (${from.xid}::xid8, ${from.seq}::bigint)
          order by xid, seq
          limit ${scan}
        ) s
        window w as (order by s.xid, s.seq)
      ) w
      where w.hit or w.last_row
      limit ${limit + 1}
    ) p
    cross join lateral (select type, created, org_id, data from events e where e.ctid = p.ctid) e
    order by p.xid, p.seq)`.execute(db);

  const floor = rows.find((r) => r.kind === 'f');
  if (after !== null && floor && comparePositions(from, floor) < 0)
    throw new ExpiredCursorError(options.retentionDays);
  const scanned = rows.filter((r) => r.kind === 'e');
  const hits = scanned.filter((r) => r.hit);
  const suffix = options.domainSuffix ?? defaultSuffix();
  if (hits.length > limit) {
    const page = hits.slice(0, limit);
    return {
      events: page.map((r) => toFeedEvent(r, suffix)),
      next_cursor: encodeCursor(page.at(-1)!),
      has_more: true,
    };
  }
  // Fewer than a page: the scan reached its end, whose last event is the marked row.
  const last = scanned.at(-1);
  return {
    events: hits.map((r) => toFeedEvent(r, suffix)),
    next_cursor: last ? encodeCursor(last) : after,
    // A scan cut short by its limit may have more to read; one that ran out has caught up.
    has_more: last !== undefined && Number(last.rn) >= scan,
  };
}

/**
 * The last visible event's place in the feed (null: none). Long polls compare it between checks:
 * it moves exactly when events become visible to readers. The order names the column, not the output
 * alias: `xid` alone would sort the text, and '999' comes after '1000'.
 */
export async function latestVisible(db: Db): Promise<FeedPosition | null> {
  const { rows } = await sql<FeedPosition>`
    select e.xid::text as xid, e.seq from events e
    where e.xid < bizdir_events_horizon()
    order by e.xid desc, e.seq desc limit 1`.execute(db);
  return rows[0] ?? null;
}
