import { sql, type Transaction } from 'kysely';
import type { Database } from '../../shared/tables.js';
import { bulkRows } from '../bulk-rows.js';

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
  const given = bulkRows(
    'k',
    { key: 'text' },
    keys.map((key) => ({ key })),
  );
  const rows = await trx
    .with('added', (db) =>
      db
        .insertInto('import_run_keys')
        .columns(['run_id', 'key'])
        .expression((eb) =>
          eb.selectFrom(given).select([eb.cast<number>(eb.val(runId), 'bigint').as('run_id'), 'k.key']),
        )
        .onConflict((oc) => oc.doNothing())
        .returning('key'),
    )
    .selectFrom(given)
    .select('k.key')
    .except((eb) => eb.selectFrom('added').select('added.key'))
    .execute();
  return new Set(rows.map((r) => r.key));
}

/**
 * Of some keys, those the run has recorded (read only: for keys a batch does not record, such as
 * those of the records it is about to create, but which an earlier batch may have met).
 */
export async function recordedRunKeys(
  trx: Transaction<Database>,
  runId: number,
  keys: readonly string[],
): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const rows = await trx
    .selectFrom('import_run_keys')
    .select('key')
    .where('run_id', '=', runId)
    .where('key', '=', sql<string>`any(${keys}::text[])`)
    .execute();
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
  if (rows[0]?.others) await trx.deleteFrom('import_run_keys').where('run_id', '=', runId).execute();
  else await sql`truncate import_run_keys`.execute(trx);
}

/**
 * Drops a run's scratch lists as it fails for good (in the failing transaction, which holds the run's
 * row): its keys and, for a `--full` location sheet, its first rows (import_run_firsts). Only the
 * run's last step reads them, and a failed run never takes it (run-fence.repository.ts). Plain
 * deletes, not deleteRunKeys's table lock: a batch still going on holds the table while it waits
 * for the run's row, and the two would deadlock.
 */
export async function deleteRunScratch(trx: Transaction<Database>, runId: number): Promise<void> {
  await trx.deleteFrom('import_run_keys').where('run_id', '=', runId).execute();
  await trx.deleteFrom('import_run_firsts').where('run_id', '=', runId).execute();
}
