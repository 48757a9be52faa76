import cliProgress from 'cli-progress';
import type { ImportRun } from '../../ingest/import-runs.repository.js';
import { getRun } from '../../ingest/import-runs.repository.js';
import type { TypedQueue } from '../../jobs/queue.js';
import type { Db } from '../../shared/db.js';

const TERMINAL = new Set(['succeeded', 'failed', 'skipped']);
const POLL_MS = 500;
/** Without a terminal, a line every few seconds is enough for a log file. */
const PLAIN_EVERY_MS = 5_000;

export function countsLine(run: ImportRun): string {
  return (
    `${run.rows_read} rows read: ${run.inserted} inserted, ${run.updated} updated, ${run.unchanged} unchanged, ` +
    `${run.rejected} rejected, ${run.warnings} warnings, ${run.duplicates} duplicates, ${run.closed} closed`
  );
}

const percent = (run: ImportRun) =>
  run.bytes_total ? Math.min(100, Math.floor((run.bytes_read / run.bytes_total) * 100)) : null;

/**
 * Follows a run until it ends, from its row in Postgres (the truth), with a progress bar on a
 * terminal and plain lines otherwise. The job's state is checked too: a job that failed for good
 * without its processor recording it (e.g. stalled too often) must not keep us waiting.
 */
export async function followRun(db: Db, queue: TypedQueue<'import'>, runId: number, jobId: string) {
  const tty = process.stderr.isTTY === true;
  const bar = tty
    ? new cliProgress.SingleBar(
        {
          format:
            'importing [{bar}] {percentage}% | {rows} rows | {inserted} new, {updated} changed, {rejected} rejected',
          stream: process.stderr,
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : null;
  bar?.start(100, 0, { rows: 0, inserted: 0, updated: 0, rejected: 0 });
  let lastPlain = 0;
  let polls = 0;
  try {
    for (;;) {
      const run = await getRun(db, runId);
      if (!run) throw new Error(`import run ${runId} disappeared`);
      const pct = percent(run);
      if (bar) {
        bar.update(pct ?? 0, {
          rows: run.rows_read,
          inserted: run.inserted,
          updated: run.updated,
          rejected: run.rejected,
        });
      } else if (Date.now() - lastPlain >= PLAIN_EVERY_MS && run.status === 'running') {
        lastPlain = Date.now();
        process.stderr.write(
          `run ${runId}: ${run.status}${pct === null ? '' : ` ${pct}%`}, ${countsLine(run)}\n`,
        );
      }
      if (TERMINAL.has(run.status)) return run;
      if (++polls % 6 === 0) {
        const job = await queue.getJob(jobId);
        const state = job ? await job.getState() : 'unknown';
        if (state === 'failed') {
          const again = await getRun(db, runId);
          if (again && TERMINAL.has(again.status)) return again;
          return { ...run, status: 'failed' as const, error: job?.failedReason ?? 'the import job failed' };
        }
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  } finally {
    bar?.stop();
  }
}
