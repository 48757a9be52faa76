import type { Db } from '../shared/db.js';
import type { EventFeed } from './event-feed.js';

/**
 * The events feed as delivery reads it. Placeholder until the events read model lands
 * (EVENTS-CONTRACT.md): every call fails, so nothing is delivered from a feed that does not exist.
 */
export function createEventFeed(_db: Db, _domainSuffix: string): EventFeed {
  const missing = () => Promise.reject(new Error('the events feed is not available'));
  return {
    read: missing,
    head: missing,
    positionAt: missing,
    compare: () => {
      throw new Error('the events feed is not available');
    },
  };
}
