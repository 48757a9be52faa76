import type { Transaction } from 'kysely';
import type { Db } from '../shared/db.js';
import type {
  Database,
  ImportFeed,
  ImportOptionsJson,
  ImportPartStatus,
  ImportStatus,
} from '../shared/tables.js';
import { deleteRunScratch } from './import-run-keys.repository.js';
import * as repo from './import-runs.repository.js';
import { csvEntriesOf } from './source.js';

/**
 * The import run's state, in one place: its statuses, how a run and its parts start, advance, fail
 * and finish, and how its progress reads. Everything else (the CLI, the processors, schedules, the
 * benchmark) calls this module; nothing else writes import_runs or import_run_parts.
 *
 * A run reads one or more sources (parts). Each part has its own status, counts and checkpoint;
 * the run's row holds the totals. A run is `running` from its first part's start until it settles.
 */
export type ImportRun = repo.ImportRun;
export type ImportPart = repo.ImportPart;
export type BatchCounts = repo.BatchCounts;

export const RUN_STATUSES: readonly ImportStatus[] = ['queued', 'running', 'succeeded', 'failed', 'skipped'];
export const PART_STATUSES: readonly ImportPartStatus[] = ['queued', 'running', 'succeeded', 'failed'];
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
    await repo.insertParts(trx, created.id, run.parts);
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
      await repo.markFailed(trx, made.id, error ?? 'failed');
      return { ...made, status: 'failed' };
    }
    if (run.status === 'queued' && parts && parts.length > 0) await repo.insertParts(trx, made.id, parts);
    return made;
  });
}
export const lastSuccessfulFingerprint = repo.lastSuccessfulFingerprint;

export const getRun = repo.getRun;
export const getPart = repo.getPart;
export const listRuns = repo.listRuns;
export const setRunJobId = repo.setRunJobId;
export const setPartJobIds = repo.setPartJobIds;

/**
 * The run's parts. A run recorded without part rows (by a schedule, or before parts existed) gets
 * them the first time they are asked for, as `bizdir import` would have made them: one part per CSV
 * of a zip holding several (local or a `.zip` URL), else one part, its source. A source that cannot
 * be listed here is one part, whose read then fails with the source's own error.
 */
export async function partsOf(db: Db, run: ImportRun): Promise<ImportPart[]> {
  const parts = await repo.getParts(db, run.id);
  if (parts.length > 0) return parts;
  const entries = await csvEntriesOf(run.source).catch(() => []);
  await repo.insertParts(
    db,
    run.id,
    entries.length > 0
      ? entries.map((entry) => ({ source: run.source, entry }))
      : [{ source: run.source, entry: null }],
  );
  return repo.getParts(db, run.id);
}

/** A part starts (or resumes): the run is running from then on. */
export async function startPart(db: Db, part: ImportPart, bytesTotal: number | null): Promise<void> {
  await repo.markPartRunning(db, part.id, bytesTotal);
  await repo.markRunning(db, part.run_id);
  await repo.refreshRunBytesTotal(db, part.run_id);
}

/** A batch of a part committed (inside its transaction). */
export const advancePart = repo.recordPartBatch;
/** The part's staged rows were lost (see repo.resetPart): it starts again. */
export const restartPart = repo.resetPart;

export async function succeedPart(db: Db, part: ImportPart, bytesRead: number): Promise<void> {
  await repo.markPartSucceeded(db, part.id, bytesRead);
}

/**
 * A part failed for good. Its run fails when it settles (a run is only as good as all its parts),
 * after merging what the other parts loaded; its `--full` step never runs.
 */
export async function failPart(db: Db, part: ImportPart, error: string): Promise<void> {
  await repo.markPartFailed(db, part.id, error);
}

/** A part's attempt failed and will be retried: noted on the part and the run, statuses unchanged. */
export async function notePartRetry(db: Db, part: ImportPart, error: string): Promise<void> {
  await repo.notePartAttemptError(db, part.id, error);
  await repo.noteAttemptError(db, part.run_id, `part ${part.part_no}: ${error}`);
}

/** The run starts (or resumes) its last step: merge and finish. */
export async function startRun(db: Db, runId: number): Promise<void> {
  await repo.markRunning(db, runId);
}

/** A merged chunk (inside its transaction): its counts, and where the merge goes on after a restart. */
export async function advanceMerge(
  trx: Transaction<Database>,
  runId: number,
  counts: Partial<BatchCounts> & { merged: number; mergeAfter: string },
  byPart: ReadonlyMap<number, { inserted: number; updated: number; unchanged: number }>,
): Promise<ImportRun> {
  await repo.addPartMergeCounts(trx, runId, byPart);
  return repo.addRunCounts(trx, runId, counts);
}

/** Counts the run-level step adds (direct-load feeds count per batch; these are the merge's extras). */
export const addRunCounts = repo.addRunCounts;

/** The run succeeded (inside the transaction of its last step). */
export async function succeedRun(
  trx: Transaction<Database>,
  runId: number,
  closed: number,
): Promise<ImportRun> {
  const parts = await repo.getParts(trx, runId);
  return repo.markSucceeded(
    trx,
    runId,
    closed,
    parts.reduce((n, p) => n + Number(p.bytes_read), 0),
  );
}

/**
 * The run failed for good (a no-op on a settled run: a late failure report must not undo a success).
 * Its scratch lists go with it, in the same transaction: nothing can need them again, since an
 * attempt still going on writes nothing more once the run is failed (run-fence.repository.ts), and
 * a retry of its job finds the run settled and does nothing.
 */
export async function failRun(db: Db | Transaction<Database>, runId: number, error: string): Promise<void> {
  const fail = async (trx: Transaction<Database>) => {
    if (await repo.markFailed(trx, runId, error)) await deleteRunScratch(trx, runId);
  };
  if (db.isTransaction) await fail(db as Transaction<Database>);
  else await db.transaction().execute(fail);
}
export const noteRunRetry = repo.noteAttemptError;

/** What a run looks like from outside: `imports show --json`, the CLI's bar. */
export interface RunView {
  id: number;
  feed: ImportFeed;
  status: ImportStatus;
  options: ImportOptionsJson;
  source: string;
  error: string | null;
  counts: RunCounts;
  bytesRead: number;
  bytesTotal: number | null;
  /** Company numbers merged so far (a staged run, the register), of `accepted` rows staged. */
  merged: number;
  accepted: number;
  createdAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
  scheduleName: string | null;
  parts: PartView[];
}

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

export interface PartView {
  partNo: number;
  source: string;
  entry: string | null;
  status: ImportPartStatus;
  error: string | null;
  counts: {
    rowsRead: number;
    accepted: number;
    rejected: number;
    warnings: number;
    inserted: number;
    updated: number;
    unchanged: number;
  };
  checkpointRows: number;
  bytesRead: number;
  bytesTotal: number | null;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
}

const iso = (d: unknown): string | null =>
  d instanceof Date || typeof d === 'string' ? new Date(d).toISOString() : null;
const duration = (from: unknown, to: unknown): number | null => {
  const a = iso(from);
  if (a === null) return null;
  const b = iso(to) ?? new Date().toISOString();
  return Date.parse(b) - Date.parse(a);
};

/** A run row's counts, as every view of a run (the CLI, `--json`, job progress) shows them. */
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

export function runView(run: ImportRun, parts: readonly ImportPart[]): RunView {
  const totals = parts.map((p) => p.bytes_total);
  const known = totals.length > 0 && totals.every((t) => t !== null);
  return {
    id: run.id,
    feed: run.feed,
    status: run.status,
    options: run.options,
    source: run.source,
    error: run.error,
    counts: runCounts(run),
    bytesRead: parts.reduce((n, p) => n + Number(p.bytes_read), 0),
    bytesTotal: known ? totals.reduce<number>((n, t) => n + Number(t), 0) : null,
    merged: Number(run.merged_rows),
    accepted: parts.reduce((n, p) => n + Number(p.accepted), 0),
    createdAt: iso(run.created_at),
    startedAt: iso(run.started_at),
    finishedAt: iso(run.finished_at),
    durationMs: run.started_at ? duration(run.started_at, run.finished_at) : null,
    scheduleName: run.schedule_name,
    parts: parts.map((p) => ({
      partNo: p.part_no,
      source: p.source,
      entry: p.entry,
      status: p.status,
      error: p.error,
      counts: {
        rowsRead: Number(p.rows_read),
        accepted: Number(p.accepted),
        rejected: Number(p.rejected),
        warnings: Number(p.warnings),
        inserted: Number(p.inserted),
        updated: Number(p.updated),
        unchanged: Number(p.unchanged),
      },
      checkpointRows: Number(p.checkpoint_rows),
      bytesRead: Number(p.bytes_read),
      bytesTotal: p.bytes_total === null ? null : Number(p.bytes_total),
      startedAt: iso(p.started_at),
      finishedAt: iso(p.finished_at),
      durationMs: p.started_at ? duration(p.started_at, p.finished_at) : null,
    })),
  };
}

/** A run with its parts, as seen from outside; undefined when there is no such run. */
export async function viewRun(db: Db, id: number): Promise<RunView | undefined> {
  const run = await repo.getRun(db, id);
  if (!run) return undefined;
  return runView(run, await repo.getParts(db, id));
}

/** The latest runs, newest first, each with its parts. */
export async function viewRuns(db: Db, limit: number): Promise<RunView[]> {
  const runs = await repo.listRuns(db, limit);
  return Promise.all(runs.map(async (r) => runView(r, await repo.getParts(db, r.id))));
}

/**
 * How far a run is, 0-100 (null when unknown): reading its sources is most of the work; a staged
 * run (the register) then merges, which takes the last fifth of the bar.
 */
export function percentOf(view: RunView, staged: boolean): number | null {
  if (isSettled(view.status)) return 100;
  const read = view.bytesTotal ? Math.min(1, view.bytesRead / view.bytesTotal) : null;
  if (!staged) return read === null ? null : Math.floor(read * 100);
  const merge = view.accepted > 0 ? Math.min(1, view.merged / view.accepted) : 0;
  const allRead = view.parts.length > 0 && view.parts.every((p) => isPartDone(p.status));
  if (read === null) return allRead ? Math.floor(80 + merge * 20) : null;
  return Math.floor((allRead ? 80 : read * 80) + merge * 20);
}

/**
 * Waits until the run settles, calling `onTick` with its view every `pollMs`. `jobFailed` (optional)
 * says why the run's job failed for good without the run recording it (stalled too often), or null.
 * With `timeoutMs`, gives up after that long and returns the run as it then is (not settled).
 */
export async function waitForRun(
  db: Db,
  runId: number,
  opts: {
    pollMs?: number;
    timeoutMs?: number;
    onTick?: (view: RunView) => void;
    jobFailed?: () => Promise<string | null>;
  } = {},
): Promise<RunView> {
  const deadline = opts.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + opts.timeoutMs;
  let polls = 0;
  for (;;) {
    const view = await viewRun(db, runId);
    if (!view) throw new Error(`import run ${runId} disappeared`);
    opts.onTick?.(view);
    if (isSettled(view.status) || Date.now() >= deadline) return view;
    if (opts.jobFailed && ++polls % 6 === 0) {
      const reason = await opts.jobFailed();
      if (reason !== null) {
        const again = await viewRun(db, runId);
        if (again && isSettled(again.status)) return again;
        return { ...view, status: 'failed', error: reason };
      }
    }
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 250));
  }
}
