import { sql } from 'kysely';
import type { Db } from '../shared/db.js';

/**
 * Retention of the change feed: the one writer that deletes events (the triggers of migration 0025
 * are the one that inserts them). The oldest events go first, in feed order, and the last one
 * deleted is recorded in events_retention in the same transaction: a cursor before it has lost
 * events (the feed answers 410), one at or after it has not.
 */

/**
 * Deletes, in one transaction, up to `limit` of the oldest visible events created before `cutoff`,
 * stopping at the first event (in feed order) that is not that old, so the events kept are always
 * the feed from some point on. Returns how many it deleted.
 */
export async function deleteOldestEvents(db: Db, cutoff: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ deleted: number }>`
    with batch as materialized (
      select xid, seq, created < ${cutoff} as old from events
      where xid < bizdir_events_horizon()
      order by xid, seq limit ${limit}
    ), keep_from as (
      select xid, seq from batch where not old order by xid, seq limit 1
    ), doomed as (
      select b.xid, b.seq from batch b
      where b.old and (not exists (select 1 from keep_from)
        or (b.xid, b.seq) < (select k.xid, k.seq from keep_from k))
    ), gone as (
      delete from events e using doomed d where e.xid = d.xid and e.seq = d.seq returning e.xid, e.seq
    ), mark as (
      -- Only forward: two workers pruning at once leave the later of their marks.
      update events_retention r set deleted_xid = t.xid, deleted_seq = t.seq, pruned_at = now()
      from (select xid, seq from gone order by xid desc, seq desc limit 1) t
      where (r.deleted_xid, r.deleted_seq) < (t.xid, t.seq)
      returning 1
    )
    select count(*)::int as deleted from gone`.execute(db);
  return rows[0]?.deleted ?? 0;
}

export interface PruneOutcome {
  deleted: number;
  batches: number;
}

/**
 * Deletes every event older than `retentionDays`, `batchSize` per transaction (so a backlog, such as
 * the first prune after a large import, never holds one long transaction, which would hold the feed
 * back), until none is left or `signal` says stop.
 */
export async function pruneEvents(
  db: Db,
  options: { retentionDays: number; batchSize?: number; now?: Date; signal?: AbortSignal },
): Promise<PruneOutcome> {
  const batchSize = options.batchSize ?? 10_000;
  const cutoff = new Date((options.now ?? new Date()).getTime() - options.retentionDays * 86_400_000);
  const outcome: PruneOutcome = { deleted: 0, batches: 0 };
  while (!options.signal?.aborted) {
    const deleted = await deleteOldestEvents(db, cutoff, batchSize);
    outcome.deleted += deleted;
    outcome.batches++;
    if (deleted < batchSize) break;
  }
  return outcome;
}
