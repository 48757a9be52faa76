import type { ImportFeed } from '../shared/tables.js';
import type { FeedHandler } from './feed-handler.js';
import { locationsFeed } from './locations/locations.feed.js';
import { registrarFeed } from './registrar/registrar.feed.js';

/**
 * Feed name -> handler. A new feed is added here only: the CLI (`bizdir import <feed>`) and the worker
 * pick it up from this table alone.
 */
export const FEEDS: Partial<Record<ImportFeed, FeedHandler>> = {
  registrar: registrarFeed,
  locations: locationsFeed,
};

export function feedHandler(feed: string): FeedHandler | undefined {
  return Object.hasOwn(FEEDS, feed) ? FEEDS[feed as ImportFeed] : undefined;
}

export const feedNames = (): string[] => Object.keys(FEEDS);
