import { parentPort } from 'node:worker_threads';
import type { CsvRecord } from '../csv.js';
import {
  type PreparedBatch,
  prepareRegistrarBatch,
  type RegistrarBatchSetup,
  type RegistrarNormalizer,
  registrarNormalizer,
} from './registrar.prepare.js';

/**
 * The worker thread of registrar.threads.ts: prepares the batches a part's reading sends it, one at a
 * time, and answers each with its rows and issues (or the error it threw).
 */
export interface ThreadRequest {
  id: number;
  setup: RegistrarBatchSetup;
  records: CsvRecord[];
}

export type ThreadAnswer = { id: number; batch: PreparedBatch } | { id: number; error: string };

// The normalizer of the last file seen (a part's batches all share one; built once, not per batch).
let last: { key: string; normalize: RegistrarNormalizer } | null = null;

const port = parentPort;
port?.on('message', ({ id, setup, records }: ThreadRequest) => {
  try {
    const key = JSON.stringify([setup.header, setup.headerRaw, setup.country, setup.today]);
    if (last?.key !== key) last = { key, normalize: registrarNormalizer(setup) };
    port.postMessage({
      id,
      batch: prepareRegistrarBatch(setup, records, last.normalize),
    } satisfies ThreadAnswer);
  } catch (error) {
    port.postMessage({
      id,
      error: error instanceof Error ? error.message : String(error),
    } satisfies ThreadAnswer);
  }
});
