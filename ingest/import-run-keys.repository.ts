import { sql, type Transaction } from 'kysely';
import type { Database } from '../shared/database.js';

/**
 * Keys a run met but did not write (unchanged records) (table import_run_keys, migration 0005);
 * the records it wrote carry its id in last_run_id instead, which saves a key row per new record.
 * Written in each batch's transaction, so it survives a crash exactly as far as the checkpoint does.
 */

/**
 * Records keys for the run; returns those the run had recorded before (repeats: the rest are seen
 * for the first time). Only the repeats come back, usually none, so a batch of thousands of keys
 * does not send them all back to be parsed.
 */
export async function recordRunKeys(
  trx: Transaction<Database>,
  runId: number,
  keys: readonly string[],
): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const { rows } = await sql<{ key: string }>`
    with added as (
      insert into import_run_keys (run_id, key)
      select ${runId}, k from unnest(${keys}::text[]) as k
      on conflict do nothing
      returning key)
    select k as key from unnest(${keys}::text[]) as k
    except
    select key from added`.execute(trx);
  return new Set(rows.map((r) => r.key));
}

/**
 * Drops a finished run's keys. A run has millions; deleting them leaves as many dead index entries
 * for the next run to step over, so when no other run holds keys the table is truncated instead
 * (under its lock, so no run can add keys between the check and the truncate).
 */
export async function deleteRunKeys(trx: Transaction<Database>, runId: number): Promise<void> {
  await sql`lock table import_run_keys in access exclusive mode`.execute(trx);
  const { rows } = await sql<{ others: boolean }>`
    select exists (select 1 from import_run_keys where run_id < ${runId})
        or exists (select 1 from import_run_keys where run_id > ${runId}) as others`.execute(trx);
  if (rows[0]?.others) await sql`delete from import_run_keys where run_id = ${runId}`.execute(trx);
  else await sql`truncate import_run_keys`.execute(trx);
}
