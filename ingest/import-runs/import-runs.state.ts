import type { Transaction } from 'kysely';
import type { Db } from '../../shared/db.js';
import type {
  Database,
  ImportFeed,
  ImportOptionsJson,
  ImportPartStatus,
  ImportStatus,
} from '../../shared/tables.js';
import { csvEntriesOf } from '../source.js';
import * as partsRepo from './import-parts.repository.js';
import type { BatchCounts, ImportPart, ImportRun } from './import-runs.repository.js';
import * as repo from './import-runs.repository.js';

/**
 * The import run's state machine: its statuses, and the steps of a run's life made of more than one
 * statement (how a run and its parts are recorded, start, advance a merge and succeed). The one-statement
 * steps (getRun, advancePart, failRun, getPart, ...) are the repositories' own functions
 * (import-runs.repository.ts, import-parts.repository.ts), called directly; nothing else writes import_runs or import_run_parts.
 *
 * A run reads one or more sources (parts). Each part has its own status, counts and checkpoint;
 * the run's row holds the totals. A run is `running` from its first part's start until it settles.
 */

/** A run in one of these states is settled: no job works on it again. */
const SETTLED: ReadonlySet<ImportStatus> = new Set(['succeeded', 'failed', 'skipped']);
export const isSettled = (status: ImportStatus) => SETTLED.has(status);
export const isPartDone = (status: ImportPartStatus) => status === 'succeeded' || status === 'failed';

/** One source of a run: a path or URL, and for a zip holding several CSVs, which one. */
export interface PartSource {
  source: string;
  entry: string | null;
}

export const partLocation = (p: PartSource) => (p.entry === null ? p.source : `${p.source} (${p.entry})`);

/** Records a run with its parts (queued). */
export async function createImportRun(
  db: Db,
  run: {
    feed: ImportFeed;
    parts: readonly PartSource[];
    options: ImportOptionsJson;
    scheduleName?: string | null;
  },
): Promise<ImportRun> {
  if (run.parts.length === 0) throw new Error('an import run needs at least one source');
  return db.transaction().execute(async (trx) => {
    const created = await repo.createRun(trx, {
      feed: run.feed,
      source: run.parts.map(partLocation).join(' '),
      options: run.options,
      scheduleName: run.scheduleName ?? null,
      parts: run.parts.length,
    });
    await partsRepo.insertParts(trx, created.id, run.parts);
    return created;
  });
}

/**
 * Records the run of one schedule slot: `queued` (with `parts`, one part row each, made in the same
 * transaction; without, made when first asked for: partsOf), `skipped` (settled at once) when the
 * source is unchanged since the schedule's last successful run, or `failed` at once with `error` (a
 * source missing: nothing is read). A slot seen twice yields one run (`created: false` the second time).
 */
export async function createScheduledRun(
  db: Db,
  run: Omit<Parameters<typeof repo.insertScheduledRun>[1], 'status'> & {
    status: 'queued' | 'skipped' | 'failed';
    parts?: readonly PartSource[];
    error?: string;
  },
): Promise<{ id: number; status: ImportStatus; created: boolean }> {
  const { parts, error, ...row } = run;
  return db.transaction().execute(async (trx) => {
    const made = await repo.insertScheduledRun(trx, {
      ...row,
      status: run.status === 'skipped' ? 'skipped' : 'queued',
    });
    if (!made.created) return made;
    if (run.status === 'failed') {
      await repo.failRun(trx, made.id, error ?? 'failed');
      return { ...made, status: 'failed' };
    }
    if (run.status === 'queued' && parts && parts.length > 0)
      await partsRepo.insertParts(trx, made.id, parts);
    return made;
  });
}

/**
 * The run's parts. A run recorded without part rows (by a schedule, or before parts existed) gets
 * them the first time they are asked for, as `bizdir import` would have made them: one part per CSV
 * of a zip holding several (local or a `.zip` URL), else one part, its source.
 */
export async function partsOf(db: Db, run: ImportRun): Promise<ImportPart[]> {
  const parts = await partsRepo.getParts(db, run.id);
  if (parts.length > 0) return parts;
  // A source that cannot be listed here is one part: its read opens the same source and fails with
  // this error, recorded on the part and the run, so nothing is lost by dropping it here.
  const entries = await csvEntriesOf(run.source).catch((): string[] => []);
  await partsRepo.insertParts(
    db,
    run.id,
    entries.length > 0
      ? entries.map((entry) => ({ source: run.source, entry }))
      : [{ source: run.source, entry: null }],
  );
  return partsRepo.getParts(db, run.id);
}

/** A part starts (or resumes): the run is running from then on. */
export async function startPart(db: Db, part: ImportPart, bytesTotal: number | null): Promise<void> {
  await partsRepo.markPartRunning(db, part.id, bytesTotal);
  await repo.startRun(db, part.run_id);
  await partsRepo.refreshRunBytesTotal(db, part.run_id);
}

/** A part's attempt failed and will be retried: noted on the part and the run, statuses unchanged. */
export async function notePartRetry(db: Db, part: ImportPart, error: string): Promise<void> {
  await partsRepo.notePartAttemptError(db, part.id, error);
  await repo.noteRunRetry(db, part.run_id, `part ${part.part_no}: ${error}`);
}

/** A merged chunk (inside its transaction): its counts, and where the merge goes on after a restart. */
export async function advanceMerge(
  trx: Transaction<Database>,
  runId: number,
  counts: Partial<BatchCounts> & { merged: number; mergeAfter: string },
  byPart: ReadonlyMap<number, { inserted: number; updated: number; unchanged: number }>,
): Promise<ImportRun> {
  await partsRepo.addPartMergeCounts(trx, runId, byPart);
  return repo.addRunCounts(trx, runId, counts);
}

/** The run succeeded (inside the transaction of its last step). */
export async function succeedRun(
  trx: Transaction<Database>,
  runId: number,
  closed: number,
): Promise<ImportRun> {
  const parts = await partsRepo.getParts(trx, runId);
  return repo.markSucceeded(
    trx,
    runId,
    closed,
    parts.reduce((n, p) => n + Number(p.bytes_read), 0),
  );
}

/** A run's counters, as every view of a run (the CLI, `--json`, job progress) shows them. */
export interface RunCounts {
  rowsRead: number;
  inserted: number;
  updated: number;
  unchanged: number;
  rejected: number;
  warnings: number;
  duplicates: number;
  closed: number;
}

export const runCounts = (run: ImportRun): RunCounts => ({
  rowsRead: run.rows_read,
  inserted: run.inserted,
  updated: run.updated,
  unchanged: run.unchanged,
  rejected: run.rejected,
  warnings: run.warnings,
  duplicates: run.duplicates,
  closed: run.closed,
});
