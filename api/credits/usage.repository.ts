import { sql } from 'kysely';
import type { Db } from '../../shared/db.js';

export interface ChargeLine {
  subscriptionId: number;
  periodStart: Date;
  n: number;
  limit: number;
}

export interface ChargeResult {
  subscriptionId: number;
  periodStart: Date;
  accepted: number;
  used: number;
}

/**
 * Adds a batch of served requests to the ledger in one statement; each line is capped at its plan
 * (bizdir_charge, migration 0002). Lines must be sorted by (subscription, period) so two processes
 * lock ledger rows in the same order and cannot deadlock. The statement commits with
 * synchronous_commit off (set_config(..., true) lasts until its implicit transaction commits): the
 * 200 still waits for the commit, so an API crash loses nothing, but not for the WAL flush, so a
 * crash of Postgres itself may lose the last fraction of a second of charges (at most three
 * wal_writer_delay, 0.6 s by default) while Redis still counts them.
 */
export async function chargeBatch(db: Db, lines: readonly ChargeLine[]): Promise<ChargeResult[]> {
  const { rows } = await sql<{ subscription_id: number; period_start: Date; accepted: number; used: number }>`
    select c.* from (select set_config('synchronous_commit', 'off', true)) s, bizdir_charge(
      ${lines.map((l) => l.subscriptionId)}::bigint[],
      ${lines.map((l) => l.periodStart.toISOString())}::timestamptz[],
      ${lines.map((l) => l.n)}::int[],
      ${lines.map((l) => l.limit)}::int[]) c`.execute(db);
  return rows.map((r) => ({
    subscriptionId: r.subscription_id,
    periodStart: r.period_start,
    accepted: r.accepted,
    used: r.used,
  }));
}

/** Credits used in a period according to the ledger (what Redis is rebuilt from). */
export async function usedInPeriod(db: Db, subscriptionId: number, periodStart: Date): Promise<number> {
  const row = await db
    .selectFrom('usage_periods')
    .select('used')
    .where('subscription_id', '=', subscriptionId)
    .where('period_start', '=', periodStart)
    .executeTakeFirst();
  return row?.used ?? 0;
}
