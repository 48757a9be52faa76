import { badRequest, HttpError } from '../shared/errors.js';

/**
 * An event's public `id`, which is also its cursor: its place in the feed, `(xid, seq)` (the writing
 * transaction's 64-bit id and the event's sequence number), written `<xid>-<seq>` in decimal.
 * Migration 0025 writes the same form into import.completed's `first_id` / `last_id`.
 */
export interface FeedPosition {
  /** The transaction id (xid8), as decimal text: it may pass 2^53. */
  xid: string;
  seq: number;
}

/** The place before every event. */
export const FEED_START: FeedPosition = { xid: '0', seq: 0 };

const CURSOR = /^(\d{1,20})-(\d{1,19})$/;
const MAX_XID = 2n ** 64n - 1n;

export const encodeCursor = (p: FeedPosition): string => `${p.xid}-${p.seq}`;

/** 400 for anything that is not a cursor this service could have given out. */
export function decodeCursor(cursor: string): FeedPosition {
  const m = CURSOR.exec(cursor);
  const xid = m ? BigInt(m[1]!) : -1n;
  const seq = m ? Number(m[2]!) : -1;
  if (!m || xid > MAX_XID || !Number.isSafeInteger(seq)) {
    throw badRequest('after must be an event id (a cursor such as "7321-55") as the feed gave it out');
  }
  return { xid: xid.toString(), seq };
}

/** Feed order: negative when `a` comes before `b`. */
export function comparePositions(a: FeedPosition, b: FeedPosition): number {
  const x = BigInt(a.xid) - BigInt(b.xid);
  if (x !== 0n) return x < 0n ? -1 : 1;
  return a.seq - b.seq;
}

/**
 * 410: the cursor is older than what retention keeps, so events after it are gone. How to start again
 * is in the message: omit `after` (the oldest event kept) after re-reading the records.
 */
export class ExpiredCursorError extends HttpError {
  override name = 'ExpiredCursorError';
  constructor(retentionDays?: number) {
    super(
      410,
      `events after this cursor are no longer kept${retentionDays ? ` (events are kept ${retentionDays} days)` : ''}; ` +
        're-read the records you keep (GET /v1/org/{domain}, /v1/location/{domain}), then read the feed ' +
        'again without `after`, from the oldest event kept',
    );
  }
}
