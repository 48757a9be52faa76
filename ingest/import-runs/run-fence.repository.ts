import type { Transaction } from 'kysely';
import type { Database } from '../../shared/tables.js';

/**
 * The fence around a run failed for good. A run can be failed while an attempt of it still runs:
 * its job stalled out (the worker lost its Redis lock) and the worker's `failed` handler failed the
 * run, yet the processor lives on. Failing a run drops its scratch lists (import_run_keys,
 * import_run_firsts), so such an attempt must write nothing more: each batch's and chunk's count
 * update and the success itself require the run still `running` (import-runs.repository.ts), and a
 * last step that reads the keys holds the run's row first (holdRunningRun). Either the failure
 * commits first and the attempt's transaction rolls back, or the last step commits first and the
 * late failure is a no-op.
 */
/**
 * A write for a run that is no longer running: it was failed for good (its job stalled out, say)
 * while an attempt went on. The attempt's transaction rolls back; the run stays as it was settled.
 */
export class RunNotRunningError extends Error {
  override name = 'RunNotRunningError';
  constructor(readonly runId: number) {
    super(`import run ${runId} is no longer running (it was settled meanwhile); this attempt stops`);
  }
}

/**
 * Locks a running run's row for the rest of the transaction (its last step), or throws
 * RunNotRunningError: a run failed for good meanwhile has lost its keys and must not finish.
 */
export async function holdRunningRun(trx: Transaction<Database>, id: number): Promise<void> {
  const row = await trx
    .selectFrom('import_runs')
    .select('id')
    .where('id', '=', id)
    .where('status', '=', 'running')
    .forUpdate()
    .executeTakeFirst();
  if (!row) throw new RunNotRunningError(id);
}
