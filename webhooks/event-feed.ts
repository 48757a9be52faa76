import { EVENT_TYPES } from '../events/feed.read-model.js';

/**
 * What delivery needs of the events feed (EVENTS-CONTRACT.md): pages in feed order after a cursor,
 * filtered by type, where the feed ends now, and where a time falls in it. The real feed is the
 * events read model (feed.read-model.ts); tests of the delivery state machine use one in memory.
 */
export interface FeedEvent {
  id: string;
  type: string;
  created: string;
  data: Record<string, unknown>;
}

export interface FeedPage {
  events: FeedEvent[];
  /** The position after the last event scanned (filtered out ones included); null: nothing scanned. */
  next_cursor: string | null;
  has_more: boolean;
}

export interface EventFeed {
  /** Up to `limit` events after `after` (null: from the oldest retained), of `types` only (undefined: all). */
  read(after: string | null, limit: number, types: readonly string[] | undefined): Promise<FeedPage>;
  /** The id of the last event a reader can see now; null when there is none. */
  head(): Promise<string | null>;
  /** The cursor just before the first event created at or after `time` (null: before the oldest retained). */
  positionAt(time: Date): Promise<string | null>;
  /** Feed order of two cursors; null (before everything) sorts first. Throws on a malformed cursor. */
  compare(a: string | null, b: string | null): number;
}

export { EVENT_TYPES } from '../events/feed.read-model.js';

/** A type pattern is an exact type, `<kind>.*`, or `*`; false when it names no type there is. */
export function isTypePattern(pattern: string, known: readonly string[] = EVENT_TYPES): boolean {
  if (pattern === '*') return true;
  if (/^[a-z_]+\.\*$/.test(pattern)) return known.some((t) => t.startsWith(pattern.slice(0, -1)));
  return known.includes(pattern);
}

/** The concrete types a list of patterns selects; undefined when it selects every type (`*`). */
export function expandTypes(
  patterns: readonly string[],
  known: readonly string[] = EVENT_TYPES,
): string[] | undefined {
  if (patterns.includes('*')) return undefined;
  return known.filter((t) =>
    patterns.some((p) => p === t || (p.endsWith('.*') && t.startsWith(p.slice(0, -1)))),
  );
}
