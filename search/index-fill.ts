import { setTimeout as sleep } from 'node:timers/promises';
import type { Meilisearch } from 'meilisearch';
import type { Db } from '../shared/db.js';
import { InOrder } from '../shared/in-order.js';
import { outboxRows, outboxSeqs, type ReplicaName } from './index-sync.repository.js';
import { streamDocuments, taskSucceeded } from './meili-client.js';
import { toOrgDocument, withUid } from './org-document.js';
import { countOrgs, orgRowsAfter, readOrgRows } from './org-rows.read-model.js';
import { writeDocuments } from './org-sync.js';
import { checkStopped, unlessStopped } from './rebuild-stop.js';

/**
 * Filling a rebuild's new index: every Org loaded from Postgres in large streamed tasks (bulkLoad),
 * then, when the rebuild follows a running import, the Orgs of the outbox rows that import keeps
 * writing (followOutbox). A few tasks are in flight at once, settled in order (InOrder).
 */
export interface FillDeps {
  db: Db;
  meili: Meilisearch;
  /** The replica `meili` is, with several (search/replicas.ts): its lock and its pending outbox rows. */
  replica?: ReplicaName;
}

export interface FillOptions {
  /** Orgs read and posted per Meilisearch task. */
  chunk?: number;
  /** Orgs read from Postgres at a time while a task's payload streams (BULK_PAGE). */
  page?: number;
  /** Document tasks in flight at once. */
  depth?: number;
  onProgress?: (done: number, total: number) => void;
  /**
   * Called between chunks (at most every couple of seconds) to keep the live index in sync while
   * the rebuild runs, for when the rebuild occupies the worker that would otherwise do it.
   */
  sync?: () => Promise<unknown>;
  /** See ReindexOptions.signal (reindex.ts). */
  signal?: AbortSignal;
}

/**
 * Orgs per document task of a bulk load, and tasks in flight. Meilisearch merges each batch into
 * every word's bitmaps, recomputes the prefix databases and commits, and that cost grows with the
 * index, so fewer, larger tasks make a shorter build (docs/benchmarks.md). Tasks of 200,000
 * documents stay under Meilisearch's 100 MB payload limit; two in flight keep Meilisearch busy while
 * the next one is streamed. Each task's payload is streamed from pages of BULK_PAGE rows
 * (streamDocuments), so the worker's memory does not grow with the task.
 */
export const BULK_CHUNK = 200_000;
export const BULK_DEPTH = 2;
/** Rows read from Postgres at a time while a task's payload streams. */
const BULK_PAGE = 10_000;
/** Orgs per task when following the outbox (documents built whole: writeDocuments). */
const FOLLOW_CHUNK = 100_000;

/** A window of document tasks whose waits end when the rebuild is stopped. */
const taskWindow = (depth: number, signal: AbortSignal | undefined) =>
  new InOrder<unknown>(depth, () => undefined, { wait: (work) => unlessStopped(work, signal) });

/**
 * Bulk-loads every Org into `target` by keyset pages of ids; with `upTo`, only the ids up to it
 * (Orgs inserted later are posted by followOutbox from their outbox rows).
 */
export async function bulkLoad(
  deps: FillDeps,
  target: string,
  options: FillOptions,
  upTo = Number.MAX_SAFE_INTEGER,
): Promise<number> {
  const chunk = options.chunk ?? BULK_CHUNK;
  const pageSize = options.page ?? BULK_PAGE;
  const total = await countOrgs(deps.db, upTo);
  const { signal } = options;
  const tasks = taskWindow(options.depth ?? BULK_DEPTH, signal);
  let lastId = 0;
  let done = 0;
  let lastSync = Date.now();
  try {
    for (;;) {
      checkStopped(signal);
      // The task's first page is read before it is posted: no Orgs left, no task.
      let rows = await orgRowsAfter(deps.db, lastId, upTo, Math.min(pageSize, chunk));
      if (rows.length === 0) break;
      let inTask = 0;
      async function* lines() {
        for (;;) {
          let text = '';
          for (const row of rows) text += `${JSON.stringify(toOrgDocument(withUid(row)))}\n`;
          inTask += rows.length;
          lastId = rows[rows.length - 1]!.id;
          yield text;
          if (inTask >= chunk) return;
          rows = await orgRowsAfter(deps.db, lastId, upTo, Math.min(pageSize, chunk - inTask));
          if (rows.length === 0) return;
        }
      }
      const taskUid = await streamDocuments(deps.meili, target, lines());
      done += inTask;
      await tasks.add(taskSucceeded(deps.meili, taskUid));
      options.onProgress?.(done, Math.max(total, done));
      if (options.sync && Date.now() - lastSync > 2_000) {
        await options.sync();
        lastSync = Date.now();
      }
    }
    await tasks.drain();
  } finally {
    // Stopped: the tasks still in flight are canceled by the caller (dropFailedBuild), not waited for.
    if (!signal?.aborted) await tasks.quiesce();
  }
  return done;
}

/** How often a rebuild that follows an import looks for new outbox rows when it found none. */
export const FOLLOW_POLL_MS = 1_000;

/**
 * Posts to `target` the Orgs of every outbox row not in `covered` (adding their seqs to it) until
 * `writing` answers false, then once more: the last pass reads every row committed before the
 * writers stopped. Each Org's current row is read after its outbox row became visible, so the
 * document posted is at least as new as the change; later changes bring rows of their own. Rows
 * of transactions that commit out of seq order are found by seq, not by a high-water mark.
 */
export async function followOutbox(
  deps: FillDeps,
  target: string,
  covered: Set<number>,
  writing: () => Promise<boolean>,
  options: Pick<FillOptions, 'chunk' | 'depth' | 'signal'>,
): Promise<number> {
  const { signal } = options;
  const chunk = options.chunk ?? FOLLOW_CHUNK;
  const tasks = taskWindow(options.depth ?? BULK_DEPTH, signal);
  let posted = 0;
  try {
    for (;;) {
      checkStopped(signal);
      // Asked before reading: when it says the writers stopped, this read sees all they wrote.
      const still = await writing();
      const seqs = (await outboxSeqs(deps.db, deps.replica)).filter((seq) => !covered.has(seq));
      if (seqs.length === 0) {
        if (!still) break;
        await unlessStopped(sleep(FOLLOW_POLL_MS), signal);
        continue;
      }
      const rows = await outboxRows(deps.db, seqs);
      const ids = [...new Set(rows.flatMap((r) => r.org_ids))];
      for (let i = 0; i < ids.length; i += chunk) {
        const { rows: orgRows, gone } = await readOrgRows(deps.db, ids.slice(i, i + chunk));
        await tasks.add(writeDocuments(deps.meili, target, orgRows, gone));
      }
      for (const r of rows) {
        covered.add(r.seq);
        posted += r.org_ids.length;
      }
    }
    await tasks.drain();
  } finally {
    // Stopped: the tasks still in flight are canceled by the caller (dropFailedBuild), not waited for.
    if (!signal?.aborted) await tasks.quiesce();
  }
  return posted;
}
