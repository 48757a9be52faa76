import { getParts } from '../../ingest/import-runs/import-parts.repository.js';
import type { ImportPart, ImportRun } from '../../ingest/import-runs/import-runs.repository.js';
import { getRun, listRuns } from '../../ingest/import-runs/import-runs.repository.js';
import {
  isPartDone,
  isSettled,
  type RunCounts,
  runCounts,
} from '../../ingest/import-runs/import-runs.state.js';
import type { Db } from '../../shared/db.js';
import type { ImportFeed, ImportOptionsJson, ImportPartStatus, ImportStatus } from '../../shared/tables.js';

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
  const run = await getRun(db, id);
  if (!run) return undefined;
  return runView(run, await getParts(db, id));
}

/** The latest runs, newest first, each with its parts. */
export async function viewRuns(db: Db, limit: number): Promise<RunView[]> {
  const runs = await listRuns(db, limit);
  return Promise.all(runs.map(async (r) => runView(r, await getParts(db, r.id))));
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
