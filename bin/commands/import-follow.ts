import cliProgress from 'cli-progress';
import { feedHandler } from '../../ingest/feeds.js';
import type { ImportRun } from '../../ingest/import-runs/import-runs.repository.js';
import { runCounts } from '../../ingest/import-runs/import-runs.state.js';
import type { TypedQueue } from '../../jobs/queue.js';
import type { Db } from '../../shared/db.js';
import { percentOf, type RunView } from './import-run.view.js';
import { waitForRun } from './import-run.wait.js';

const POLL_MS = 500;
/** Without a terminal, a line every few seconds is enough for a log file. */
const PLAIN_EVERY_MS = 5_000;
/** How long a run may stay queued before we look for a worker (one taking it needs a moment). */
const NO_WORKER_GRACE_MS = 3_000;

/** One line of counts, from a run row or a run's view. */
export function countsLine(run: ImportRun | RunView): string {
  const c = 'counts' in run ? run.counts : runCounts(run);
  return (
    `${c.rowsRead} rows read: ${c.inserted} inserted, ${c.updated} updated, ${c.unchanged} unchanged, ` +
    `${c.rejected} rejected, ${c.warnings} warnings, ${c.duplicates} duplicates, ${c.closed} closed`
  );
}

/**
 * Follows a run (all its parts) until it settles: one progress bar on a terminal, a line every few
 * seconds otherwise. The job's state is checked too: a job that failed for good without its
 * processor recording it (e.g. stalled too often) must not keep us waiting.
 */
export async function followRun(db: Db, queue: TypedQueue<'import'>, runId: number, jobId: string) {
  const tty = process.stderr.isTTY === true;
  const bar = tty
    ? new cliProgress.SingleBar(
        {
          format:
            'importing [{bar}] {percentage}% | {parts} | {rows} rows | {inserted} new, {updated} changed, {rejected} rejected',
          stream: process.stderr,
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : null;
  bar?.start(100, 0, { parts: '', rows: 0, inserted: 0, updated: 0, rejected: 0 });
  let lastPlain = 0;
  // A run that stays queued while no worker listens would wait for ever in silence: said once.
  let nextWorkerCheck = Date.now() + NO_WORKER_GRACE_MS;
  const checkForWorkers = async (status: string) => {
    if (status !== 'queued' || Date.now() < nextWorkerCheck) return;
    nextWorkerCheck = Date.now() + NO_WORKER_GRACE_MS;
    // Redis not answering says nothing about the workers: no verdict now, asked again after the grace.
    const workers = await queue.getWorkers().catch(() => null);
    if (workers === null || workers.length > 0) return;
    nextWorkerCheck = Number.POSITIVE_INFINITY;
    bar?.stop();
    process.stderr.write(
      `run ${runId} is queued, but no worker is taking import jobs: start one with \`bizdir worker\` ` +
        '(still waiting; Ctrl-C stops waiting, the run stays queued)\n',
    );
  };
  try {
    return await waitForRun(db, runId, {
      pollMs: POLL_MS,
      onTick: (view) => {
        void checkForWorkers(view.status);
        const pct = percentOf(view, feedHandler(view.feed)?.staged !== undefined);
        const done = view.parts.filter((p) => p.status === 'succeeded').length;
        const parts = view.parts.length > 1 ? `${done}/${view.parts.length} parts read` : '';
        if (bar) {
          bar.update(pct ?? 0, {
            parts,
            rows: view.counts.rowsRead,
            inserted: view.counts.inserted,
            updated: view.counts.updated,
            rejected: view.counts.rejected,
          });
        } else if (Date.now() - lastPlain >= PLAIN_EVERY_MS && view.status === 'running') {
          lastPlain = Date.now();
          process.stderr.write(
            `run ${runId}: ${view.status}${pct === null ? '' : ` ${pct}%`}${parts ? `, ${parts}` : ''}, ${countsLine(view)}\n`,
          );
        }
      },
      jobFailed: async () => {
        const job = await queue.getJob(jobId);
        if (!job || (await job.getState()) !== 'failed') return null;
        return job.failedReason ?? 'the import job failed';
      },
    });
  } finally {
    bar?.stop();
  }
}
