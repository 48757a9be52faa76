import { isSettled } from '../../ingest/import-runs/import-runs.state.js';
import type { Db } from '../../shared/db.js';
import { type RunView, viewRun } from './import-run.view.js';

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
