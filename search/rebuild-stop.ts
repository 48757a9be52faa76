import { observeLater } from '../shared/outage.js';

/**
 * Stopping a rebuild: when the worker shuts down (or `bizdir reindex --wait` is interrupted), its
 * signal aborts and every wait of the build ends at once with RebuildStopped. The build's tasks are
 * then canceled and its half-built index dropped (reindex.ts dropFailedBuild); the live index and the
 * outbox stay as they were.
 */

/** A rebuild stopped by its signal (see ReindexOptions.signal): nothing was swapped in. */
export class RebuildStopped extends Error {
  constructor() {
    super('search index rebuild stopped before the swap: the live index is unchanged');
    this.name = 'RebuildStopped';
  }
}

/** `work`, unless the signal aborts first: then RebuildStopped (what `work` does afterwards is dropped). */
export function unlessStopped<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) {
    // Dropped: the build is stopping, and its tasks are canceled with it (dropFailedBuild).
    observeLater(work);
    return Promise.reject(new RebuildStopped());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new RebuildStopped());
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

export const checkStopped = (signal: AbortSignal | undefined) => {
  if (signal?.aborted) throw new RebuildStopped();
};
