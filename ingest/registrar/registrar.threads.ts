import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CsvRecord } from '../csv.js';
import { type PreparedBatch, prepareRegistrarBatch, type RegistrarBatchSetup } from './registrar.prepare.js';
import type { ThreadAnswer, ThreadRequest } from './registrar.thread.js';

/**
 * Prepares a part's batches (split, normalize, hash, staging lines) on a worker thread, so a part's
 * reading uses the machine's second core: the main thread cuts records and talks to Postgres while
 * the thread prepares the next batch (run-import.ts reads one batch ahead). A first import's reading
 * was one Node thread busy 95% of the time with Postgres idle beside it (docs/imports.md).
 *
 * One thread per process, started on first use and unref'd (it never keeps a process alive); parts
 * read at once by one process share it (their batches queue). If the thread cannot start, or dies,
 * batches are prepared on the main thread as before: the result is the same either way.
 */
const here = fileURLToPath(import.meta.url);
// Built (dist/*.js) or run from source through tsx (*.ts): the thread's file has this file's extension.
const THREAD_FILE = path.join(path.dirname(here), `registrar.thread${path.extname(here)}`);

/**
 * The thread's young generation (V8's new space: two semi-spaces and the large-object space), in MB:
 * 3x Node's default for a worker thread (48 MB). A batch lives on the thread while it is prepared, so
 * with the default most of its objects outlived two scavenges, were promoted and collected again as old
 * objects: garbage collection took a third of the thread's time. With 144 MB, a 1M first import read
 * and staged in 23.7-27.0 s instead of 30.7-33.7 s, with 4-13 s less Node CPU (docs/imports.md,
 * "Seventh round").
 */
const YOUNG_GENERATION_MB = 144;

let thread: Worker | null = null;
let broken = false;
let nextId = 1;
const pending = new Map<number, { resolve: (b: PreparedBatch) => void; reject: (e: Error) => void }>();

function start(): Worker | null {
  if (thread) return thread;
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
    worker.unref();
    worker.on('message', (answer: ThreadAnswer) => {
      const waiting = pending.get(answer.id);
      if (!waiting) return;
      pending.delete(answer.id);
      if ('error' in answer) waiting.reject(new Error(answer.error));
      else waiting.resolve(answer.batch);
    });
    const fail = (error: Error) => {
      if (thread === worker) thread = null;
      // A thread that cannot run at all (e.g. its file missing) is not tried again in this process.
      broken = true;
      for (const [id, waiting] of pending) {
        pending.delete(id);
        waiting.reject(error);
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the registrar preparing thread exited (code ${code})`)));
    thread = worker;
    return worker;
  } catch {
    broken = true;
    return null;
  }
}

/** Starts the thread ahead of the first batch (it loads while the part's first records are cut). */
export function startPreparing(): void {
  start();
}

/** prepareRegistrarBatch, on the worker thread when there is one. */
export async function prepareOffThread(
  setup: RegistrarBatchSetup,
  records: readonly CsvRecord[],
): Promise<PreparedBatch> {
  const worker = start();
  if (!worker) return prepareRegistrarBatch(setup, records);
  const id = nextId++;
  const answer = new Promise<PreparedBatch>((resolve, reject) => pending.set(id, { resolve, reject }));
  // While a batch is on the thread, the thread keeps the process alive (it is unref'd otherwise).
  if (pending.size === 1) worker.ref();
  worker.postMessage({ id, setup, records: records as CsvRecord[] } satisfies ThreadRequest);
  try {
    return await answer;
  } catch (error) {
    // The thread died under this batch (not an error of the batch itself): prepare it here instead.
    if (broken) return prepareRegistrarBatch(setup, records);
    throw error;
  } finally {
    if (pending.size === 0) thread?.unref();
  }
}
