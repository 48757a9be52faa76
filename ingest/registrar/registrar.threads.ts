import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CsvRecord } from '../csv.js';
import { type PreparedBatch, prepareRegistrarBatch, type RegistrarBatchSetup } from './registrar.prepare.js';
import type { ThreadAnswer, ThreadRequest } from './registrar.thread.js';

/**
 * Prepares a part's batches (split, normalize, hash, staging lines) on worker threads, so a part's
 * reading uses the machine's other cores: the main thread cuts records and talks to Postgres while
 * the threads prepare the next batches (ingest/run/read-source.ts reads PREPARING_THREADS + 1 batches ahead, and
 * takes them back in order). A first import's reading was one Node thread busy 95% of the time with
 * Postgres idle beside it; then one preparing thread busy all the time (docs/imports.md).
 *
 * PREPARING_THREADS per process, each started on first use and unref'd (none keeps a process alive);
 * each batch goes to the thread holding the fewest, and parts read at once by one process share them.
 * A batch depends on nothing prepared before it (the normalizer a thread keeps is rebuilt from the
 * batch's own setup), so which thread prepares it does not matter. If a thread cannot start, or dies,
 * batches are prepared on the main thread as before: the result is the same either way.
 */
const here = fileURLToPath(import.meta.url);
// Built (dist/*.js) or run from source through tsx (*.ts): the thread's file has this file's extension.
const THREAD_FILE = path.join(path.dirname(here), `registrar.thread${path.extname(here)}`);

/**
 * How many preparing threads a process runs: two where there are two cores or more. One thread was
 * the read's bound (busy all through a part's reading while the main thread and Postgres left half
 * a core idle: docs/imports.md); a second takes that half. More would only compete with the main
 * thread and Postgres on a 2-core machine; more cores are better used by more parts at once
 * (`bizdir worker --concurrency`, more worker processes), each of which reads with its own batches.
 */
export const PREPARING_THREADS = Math.min(2, Math.max(1, availableParallelism()));

/**
 * The thread's young generation (V8's new space: two semi-spaces and the large-object space), in MB:
 * 3x Node's default for a worker thread (48 MB). A batch lives on the thread while it is prepared, so
 * with the default most of its objects outlived two scavenges, were promoted and collected again as old
 * objects: garbage collection took a third of the thread's time. With 144 MB, a 1M first import read
 * and staged in 23.7-27.0 s instead of 30.7-33.7 s, with 4-13 s less Node CPU (docs/imports.md,
 * "Seventh round"). That budget is shared by the preparing threads (72 MB each for two): each holds
 * one batch at a time, and two at 144 MB took the worker's peak from 416-426 to 540-574 MB, against
 * 429 MB at 72 MB each for the same read time (docs/imports.md, "Two preparing threads").
 */
const YOUNG_GENERATION_MB = Math.round(144 / PREPARING_THREADS);

interface Waiting {
  resolve: (b: PreparedBatch) => void;
  reject: (e: Error) => void;
}

/** One preparing thread, the batches it holds, and how many it was sent. */
interface Slot {
  worker: Worker;
  pending: Map<number, Waiting>;
  sent: number;
}

const slots: (Slot | null)[] = Array.from({ length: PREPARING_THREADS }, () => null);
let broken = false;
let nextId = 1;

function startSlot(i: number): Slot | null {
  const existing = slots[i];
  if (existing) return existing;
  if (broken) return null;
  try {
    // From source (tests, benchmarks, `node --import tsx`), the thread registers tsx itself: a worker
    // does not reliably inherit the parent's `--import` loader hooks.
    const worker = THREAD_FILE.endsWith('.ts')
      ? new Worker(
          `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(pathToFileURL(THREAD_FILE).href)}); })`,
          { eval: true, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } },
        )
      : new Worker(THREAD_FILE, { resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
    const slot: Slot = { worker, pending: new Map(), sent: 0 };
    worker.on('message', (answer: ThreadAnswer) => {
      const waiting = slot.pending.get(answer.id);
      if (!waiting) return;
      slot.pending.delete(answer.id);
      if (slot.pending.size === 0) worker.unref();
      if ('error' in answer) waiting.reject(new Error(answer.error));
      else waiting.resolve(answer.batch);
    });
    const fail = (error: Error) => {
      if (slots[i] === slot) slots[i] = null;
      // A thread that cannot run at all (e.g. its file missing) is not tried again in this process.
      broken = true;
      for (const [id, waiting] of slot.pending) {
        slot.pending.delete(id);
        waiting.reject(error);
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the registrar preparing thread exited (code ${code})`)));
    // After the listeners: adding a 'message' listener refs the thread again (a thread started and
    // never given a batch then kept the worker process from exiting).
    worker.unref();
    slots[i] = slot;
    return slot;
  } catch {
    broken = true;
    return null;
  }
}

/** The thread holding the fewest batches (started on first use), or null once threads are broken. */
function pick(): Slot | null {
  let best: Slot | null = null;
  for (let i = 0; i < slots.length; i++) {
    const slot = startSlot(i);
    if (slot && (best === null || slot.pending.size < best.pending.size)) best = slot;
  }
  return best;
}

/** The batches each running preparing thread was sent (for tests: how the work was spread). */
export const batchesSentPerThread = () => slots.flatMap((s) => (s ? [s.sent] : []));

/** Starts the threads ahead of the first batch (they load while the part's first records are cut). */
export function startPreparing(): void {
  for (let i = 0; i < slots.length; i++) startSlot(i);
}

/** prepareRegistrarBatch, on the worker thread when there is one. */
export async function prepareOffThread(
  setup: RegistrarBatchSetup,
  records: readonly CsvRecord[],
): Promise<PreparedBatch> {
  const slot = pick();
  if (!slot) return prepareRegistrarBatch(setup, records);
  const id = nextId++;
  const answer = new Promise<PreparedBatch>((resolve, reject) => slot.pending.set(id, { resolve, reject }));
  // While a batch is on a thread, the thread keeps the process alive (it is unref'd otherwise).
  if (slot.pending.size === 1) slot.worker.ref();
  slot.sent++;
  slot.worker.postMessage({ id, setup, records: records as CsvRecord[] } satisfies ThreadRequest);
  try {
    return await answer;
  } catch (error) {
    // The thread died under this batch (not an error of the batch itself): prepare it here instead.
    if (broken) return prepareRegistrarBatch(setup, records);
    throw error;
  }
}
