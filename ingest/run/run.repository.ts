import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../shared/tables.js';

/**
 * The statements the run machinery sends besides the run's own rows (import-runs/): the feed's
 * session advisory lock (taken on a connection of its own, db.connection()), and the settings of a batch's or
 * a merge chunk's transaction.
 */
/** Takes the lock if it is free; false when another session holds it. */
export async function tryAdvisoryLock(conn: Kysely<Database>, key: string): Promise<boolean> {
  const got = await sql<{ ok: boolean }>`select pg_try_advisory_lock(hashtext(${key})) as ok`.execute(conn);
  return got.rows[0]?.ok === true;
}

/** Waits for the lock and takes it. */
export async function advisoryLock(conn: Kysely<Database>, key: string): Promise<void> {
  await sql`select pg_advisory_lock(hashtext(${key}))`.execute(conn);
}

export async function advisoryUnlock(conn: Kysely<Database>, key: string): Promise<void> {
  await sql`select pg_advisory_unlock(hashtext(${key}))`.execute(conn);
}

/**
 * A batch's or a chunk's transaction. Safe without waiting for the WAL flush: what it commits carries
 * its own checkpoint (or merge position), so a server crash can only lose whole batches together with
 * their checkpoint, and the retry redoes them. `lockTimeout`: transactions in flight wait for each
 * other in JavaScript too, where Postgres cannot see a cycle; a lock wait that outlasts any batch then
 * fails the transaction (the retry resumes) instead of waiting for ever.
 */
export async function relaxTransaction(trx: Transaction<Database>, lockTimeout: boolean): Promise<void> {
  await sql`set local synchronous_commit = off`.execute(trx);
  if (lockTimeout) await sql`set local lock_timeout = '60s'`.execute(trx);
}
