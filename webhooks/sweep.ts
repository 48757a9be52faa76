import type { Db } from '../shared/db.js';
import { dueDeliveries, pruneAttempts } from './delivery.repository.js';
import type { EventFeed } from './event-feed.js';

/**
 * The endpoints that have something to send now: not disabled, no retry waiting, no live lease, and
 * behind the feed's end (or with a replay to start). Postgres holds this, so a sweep finds every one
 * again after Redis lost its queue or a worker died.
 */
export async function endpointsBehind(db: Db, feed: EventFeed, now: Date): Promise<number[]> {
  const head = await feed.head();
  const due = await dueDeliveries(db, now);
  return due
    .filter(
      (d) =>
        d.replay_from !== null ||
        d.replay_to !== null ||
        d.replay_until !== null ||
        (head !== null && feed.compare(d.after_event, head) < 0),
    )
    .map((d) => d.endpoint_id);
}

/** How long the requests made to receivers are kept (GET …/deliveries shows recent ones). */
export const ATTEMPTS_KEPT_MS = 7 * 86_400_000;

export async function pruneOldAttempts(db: Db, now: Date): Promise<number> {
  return pruneAttempts(db, new Date(now.getTime() - ATTEMPTS_KEPT_MS));
}
