import { sql, type Transaction } from 'kysely';
import type { Database } from '../shared/database.js';

/**
 * The keys a run has loaded (table import_run_keys, migration 0005). Written in each batch's
 * transaction, so it survives a crash exactly as far as the checkpoint does.
 */

/** Records keys for the run; returns those seen for the first time (the rest are duplicates). */
export async function recordRunKeys(
  trx: Transaction<Database>,
  runId: number,
  keys: readonly string[],
): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const { rows } = await sql<{ key: string }>`
    insert into import_run_keys (run_id, key)
    select ${runId}, k from unnest(${keys}::text[]) as k
    on conflict do nothing
    returning key`.execute(trx);
  return new Set(rows.map((r) => r.key));
}

export async function deleteRunKeys(trx: Transaction<Database>, runId: number): Promise<void> {
  await sql`delete from import_run_keys where run_id = ${runId}`.execute(trx);
}
