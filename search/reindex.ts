import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Meilisearch } from 'meilisearch';
import type { Db } from '../shared/db.js';
import { observeLater, reasonOf } from '../shared/outage.js';
import { ensureOrgIndex, ORG_INDEX_LOAD_SETTINGS, ORG_INDEX_SETTINGS } from './index-definition.js';
import { indexExists, streamDocuments, succeeded, taskSucceeded } from './meili-client.js';
import { toOrgDocument, withUid } from './org-document.js';
import { readOrgRows, withIndexerLock, writeDocuments } from './org-sync.js';

/** Building the sort and filter structures of a full register takes a while. */
const SETTINGS_TIMEOUT_MS = 4 * 60 * 60 * 1000;

/**
 * Zero-downtime rebuild: a fresh index is filled from Postgres while the live one keeps serving
 * (and keeps receiving changes from the indexer), then the two are swapped in one Meilisearch task.
 *
 * Changes committed during the rebuild: the new index is registered in search_reindex (under the
 * indexer lock) before any Org is read, and from then on the indexer records every Org it writes to
 * the live index in search_reindex_replay. After the bulk load, the rebuild takes the indexer lock,
 * writes the current state of those Orgs into the new index, and swaps while still holding the lock,
 * so no change lands only in the index that is about to be retired. Changes still in the outbox
 * at that point are written by the indexer after the swap, into the new live index.
 */
export interface ReindexDeps {
  db: Db;
  meili: Meilisearch;
  indexUid: string;
  log?: (line: string) => void;
}

export interface ReindexOptions {
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
  /**
   * Aborted when the worker shuts down (or `bizdir reindex --wait` is interrupted): the build stops at
   * its next step or wait, its Meilisearch tasks are canceled and its half-built index dropped, and
   * RebuildStopped is thrown. The live index and the outbox stay as they were; the next rebuild
   * starts over.
   */
  signal?: AbortSignal;
}

/** A rebuild stopped by its signal (see ReindexOptions.signal): nothing was swapped in. */
export class RebuildStopped extends Error {
  constructor() {
    super('search index rebuild stopped before the swap: the live index is unchanged');
    this.name = 'RebuildStopped';
  }
}

/** `work`, unless the signal aborts first: then RebuildStopped (what `work` does afterwards is dropped). */
function unlessStopped<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => {});
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

const checkStopped = (signal: AbortSignal | undefined) => {
  if (signal?.aborted) throw new RebuildStopped();
};

export interface ReindexResult {
  target: string;
  documents: number;
  replayed: number;
  ms: number;
}

/**
 * Orgs per document task of a bulk load, and tasks in flight. Meilisearch merges each batch into
 * every word's bitmaps, recomputes the prefix databases and commits, and that cost grows with the
 * index: at 5.7M those steps were 62 % of the document batches' time with tasks of 20,000
 * (docs/search.md, "Fewer, larger batches"). Tasks of 200,000 documents (about 58 MB of NDJSON,
 * under Meilisearch's 100 MB payload limit) make a tenth as many batches (the build 14.5 % shorter
 * at 5.7M than with 100,000); two in flight keep Meilisearch busy while the next one is streamed.
 * Each task's payload is streamed from pages of BULK_PAGE rows (streamDocuments), so the worker's
 * memory does not grow with the task.
 */
export const BULK_CHUNK = 200_000;
export const BULK_DEPTH = 2;
/** Rows read from Postgres at a time while a task's payload streams. */
const BULK_PAGE = 10_000;
/** Orgs per task when following the outbox (documents built whole: writeDocuments). */
const FOLLOW_CHUNK = 100_000;

/**
 * Bulk-loads every Org into `target` by keyset pages of ids; with `upTo`, only the ids up to it
 * (Orgs inserted later are posted by followOutbox from their outbox rows).
 */
async function bulkLoad(
  deps: ReindexDeps,
  target: string,
  options: ReindexOptions,
  upTo = Number.MAX_SAFE_INTEGER,
): Promise<number> {
  const chunk = options.chunk ?? BULK_CHUNK;
  const depth = options.depth ?? BULK_DEPTH;
  const pageSize = options.page ?? BULK_PAGE;
  const total = await deps.db
    .selectFrom('orgs')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('id', '<=', upTo)
    .executeTakeFirstOrThrow();
  const inFlight: Promise<unknown>[] = [];
  let lastId = 0;
  let done = 0;
  let lastSync = Date.now();
  const page = (after: number, limit: number) =>
    deps.db
      .selectFrom('orgs')
      .select(['id', 'name', 'version_number', sql<Date>`updated`.as('updated')])
      .where('id', '>', after)
      .where('id', '<=', upTo)
      .orderBy('id')
      .limit(limit)
      .execute();
  const { signal } = options;
  try {
    for (;;) {
      checkStopped(signal);
      // The task's first page is read before it is posted: no Orgs left, no task.
      let rows = await page(lastId, Math.min(pageSize, chunk));
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
          rows = await page(lastId, Math.min(pageSize, chunk - inTask));
          if (rows.length === 0) return;
        }
      }
      const taskUid = await streamDocuments(deps.meili, target, lines());
      // Awaited below (depth-limited, then all), which throws its failure.
      inFlight.push(observeLater(taskSucceeded(deps.meili, taskUid)));
      done += inTask;
      if (inFlight.length >= depth) await unlessStopped(inFlight.shift()!, signal);
      options.onProgress?.(done, Math.max(total.n, done));
      if (options.sync && Date.now() - lastSync > 2_000) {
        await options.sync();
        lastSync = Date.now();
      }
    }
    await unlessStopped(Promise.all(inFlight), signal);
  } finally {
    // Stopped: the tasks still in flight are canceled by the caller (dropFailedBuild), not waited for.
    if (!signal?.aborted) await Promise.allSettled(inFlight);
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
async function followOutbox(
  deps: ReindexDeps,
  target: string,
  covered: Set<number>,
  writing: () => Promise<boolean>,
  options: Pick<ReindexOptions, 'chunk' | 'depth' | 'signal'>,
): Promise<number> {
  const { signal } = options;
  const chunk = options.chunk ?? FOLLOW_CHUNK;
  const depth = options.depth ?? BULK_DEPTH;
  const inFlight: Promise<unknown>[] = [];
  let posted = 0;
  try {
    for (;;) {
      checkStopped(signal);
      // Asked before reading: when it says the writers stopped, this read sees all they wrote.
      const still = await writing();
      const seqs = await deps.db.selectFrom('search_outbox').select('seq').execute();
      const fresh = seqs.map((r) => Number(r.seq)).filter((seq) => !covered.has(seq));
      if (fresh.length === 0) {
        if (!still) break;
        await unlessStopped(sleep(FOLLOW_POLL_MS), signal);
        continue;
      }
      const rows = await deps.db
        .selectFrom('search_outbox')
        .select(['seq', 'org_ids'])
        .where('seq', '=', sql<number>`any(${fresh}::bigint[])`)
        .execute();
      const ids = [...new Set(rows.flatMap((r) => r.org_ids.map(Number)))];
      for (let i = 0; i < ids.length; i += chunk) {
        const { rows: orgRows, gone } = await readOrgRows(deps.db, ids.slice(i, i + chunk));
        // Awaited below (depth-limited, then all), which throws its failure.
        inFlight.push(observeLater(writeDocuments(deps.meili, target, orgRows, gone)));
        if (inFlight.length >= depth) await unlessStopped(inFlight.shift()!, signal);
      }
      for (const r of rows) {
        covered.add(Number(r.seq));
        posted += r.org_ids.length;
      }
    }
    await unlessStopped(Promise.all(inFlight), signal);
  } finally {
    // Stopped: the tasks still in flight are canceled by the caller (dropFailedBuild), not waited for.
    if (!signal?.aborted) await Promise.allSettled(inFlight);
  }
  return posted;
}

/** Drops registrations (and their half-built indexes) left by a rebuild that died. */
async function clearStaleRebuilds(deps: ReindexDeps): Promise<void> {
  const stale = await deps.db.selectFrom('search_reindex').select('target').execute();
  for (const { target } of stale) {
    if (target !== deps.indexUid) await deps.meili.deleteIndexIfExists(target);
    await deps.db.deleteFrom('search_reindex').where('target', '=', target).execute();
  }
}

export interface CatchUpResult {
  /** False when another indexer held the lock and nothing was done. */
  ran: boolean;
  documents: number;
  /** Org changes (outbox ids, duplicates included) posted while following an import (`follow`). */
  followed: number;
  /** Org changes (outbox ids) the new index made unnecessary to sync one by one. */
  covered: number;
  ms: number;
}

/**
 * Brings a far-behind live index up to date by building a fresh one from Postgres and swapping it
 * in, instead of posting the backlog document batch by batch (search/catch-up.ts decides when).
 * After a bulk import that is both faster (one build with filters and sorts declared once, against
 * one Meilisearch update per batch, each re-merging the facet and prefix databases of the whole
 * index) and smaller (the incremental path leaves the index's file 1.5-3× its used size).
 *
 * Holds the indexer lock throughout, so no sync posts to the live index meanwhile: the backlog
 * waits in the outbox. The outbox rows visible when the lock is taken are committed, so the bulk
 * load, which starts after, reads their changes; they are deleted after the swap. Rows that arrive
 * later stay and are synced into the new index afterwards (an Org the bulk load already read is
 * posted again: harmless). If anything fails, the live index and the outbox are left as they were.
 * A `bizdir reindex` that is building at that moment is superseded (as by a later reindex).
 *
 * With `follow` (an import is still writing: catch-up.ts `importWriting`), the build starts now:
 * it loads the Orgs that exist, then keeps posting the Orgs of new outbox rows to the new index
 * until `follow` answers false, and only then declares filters and sorts and swaps. Meilisearch
 * indexes the register on the core the import leaves idle instead of after it, and the new index
 * gets only documents until the end (no facet or sort structure rebuilt per batch). The outbox rows
 * it posted are deleted after the swap, like the ones it started from.
 */
export async function rebuildForBacklog(
  deps: ReindexDeps,
  options: Pick<ReindexOptions, 'chunk' | 'depth' | 'onProgress' | 'signal'> & {
    follow?: () => Promise<boolean>;
  } = {},
): Promise<CatchUpResult> {
  const started = Date.now();
  const target = `${deps.indexUid}__catchup_${started.toString(36)}`;
  const log = deps.log ?? (() => {});
  const locked = await withIndexerLock(deps.db, false, async () => {
    const covered = await deps.db.selectFrom('search_outbox').select(['seq', 'id_count']).execute();
    // The Orgs the bulk load reads: every later insert has an outbox row that is not in `covered`.
    const upTo = options.follow
      ? Number(
          (
            await deps.db
              .selectFrom('orgs')
              .select(sql<string>`coalesce(max(id), 0)`.as('m'))
              .executeTakeFirstOrThrow()
          ).m,
        )
      : undefined;
    await clearStaleRebuilds(deps);
    // Registered so that a crash leaves nothing behind: the next rebuild drops what is registered.
    await deps.db.insertInto('search_reindex').values({ target }).execute();
    try {
      if ((await ensureOrgIndex(deps.meili, deps.indexUid)) === 'older')
        log(`${deps.indexUid} is of an older format: the build replaces it`);
      await ensureOrgIndex(deps.meili, target, ORG_INDEX_LOAD_SETTINGS);
      const ids = covered.reduce((n, r) => n + Number(r.id_count), 0);
      log(`search index ${ids} Org changes behind: building ${target} instead of syncing them`);
      const documents = await bulkLoad(deps, target, options, upTo);
      const seqs = new Set(covered.map((r) => Number(r.seq)));
      let followed = 0;
      if (options.follow) {
        log(`loaded ${documents} Orgs into ${target}; following the running import`);
        followed = await followOutbox(deps, target, seqs, options.follow, options);
      }
      log(`loaded ${documents + followed} Orgs into ${target}; building sorts and filters`);
      await unlessStopped(
        succeeded(deps.meili.index(target).updateSettings(ORG_INDEX_SETTINGS), SETTINGS_TIMEOUT_MS),
        options.signal,
      );
      checkStopped(options.signal);
      await succeeded(deps.meili.swapIndexes([{ indexes: [deps.indexUid, target], rename: false }]));
      await deps.db
        .deleteFrom('search_outbox')
        .where('seq', '=', sql<number>`any(${[...seqs]}::bigint[])`)
        .execute();
      await deps.db.deleteFrom('search_reindex').where('target', '=', target).execute();
      // `target` now holds the retired index.
      await succeeded(deps.meili.deleteIndex(target));
      return { documents, followed, covered: ids + followed };
    } catch (error) {
      await dropFailedBuild(deps, target);
      throw error;
    }
  });
  if (!locked.locked) return { ran: false, documents: 0, followed: 0, covered: 0, ms: Date.now() - started };
  return { ran: true, ...locked.value, ms: Date.now() - started };
}

/** Best effort after a failed build: the build's own error is what the caller must see, and the next rebuild clears what is left (clearStaleRebuilds). */
async function dropFailedBuild(deps: ReindexDeps, target: string): Promise<void> {
  const log = deps.log ?? (() => {});
  const leftBehind = (what: string) => (err: unknown) =>
    log(`warning: could not ${what} after the failed rebuild (the next rebuild clears it): ${reasonOf(err)}`);
  await deps.db
    .deleteFrom('search_reindex')
    .where('target', '=', target)
    .execute()
    .catch(leftBehind(`unregister ${target}`));
  // Its document and settings tasks still queued or running are work for nothing (and what a
  // stopping worker would otherwise wait for): canceled before the index is deleted.
  await deps.meili.tasks
    .cancelTasks({ indexUids: [target], statuses: ['enqueued', 'processing'] })
    .catch(leftBehind(`cancel the tasks of ${target}`));
  const exists = await indexExists(deps.meili, target).catch((err: unknown) => {
    leftBehind(`check for index ${target}`)(err);
    return false;
  });
  if (exists) await deps.meili.deleteIndex(target).catch(leftBehind(`delete index ${target}`));
}

export async function reindex(deps: ReindexDeps, options: ReindexOptions = {}): Promise<ReindexResult> {
  const started = Date.now();
  const target = `${deps.indexUid}__build_${started.toString(36)}`;
  const log = deps.log ?? (() => {});
  // The live index must exist for the swap; a first run swaps with an empty one.
  if ((await ensureOrgIndex(deps.meili, deps.indexUid)) === 'older')
    log(`${deps.indexUid} is of an older format: the build replaces it`);
  // The new index starts with the words only; filters and sorts are built once, after the bulk load
  // (cheaper than maintaining them document batch by document batch).
  await ensureOrgIndex(deps.meili, target, ORG_INDEX_LOAD_SETTINGS);
  await withIndexerLock(deps.db, true, async () => {
    await clearStaleRebuilds(deps);
    await deps.db.insertInto('search_reindex').values({ target }).execute();
  });
  log(`building ${target}`);
  try {
    const documents = await bulkLoad(deps, target, options);
    log(`loaded ${documents} Orgs; building sorts and filters`);
    await unlessStopped(
      succeeded(deps.meili.index(target).updateSettings(ORG_INDEX_SETTINGS), SETTINGS_TIMEOUT_MS),
      options.signal,
    );
    checkStopped(options.signal);
    log('replaying changes and swapping');
    const swapped = await withIndexerLock(deps.db, true, async () => {
      // A later `reindex` clears older registrations (and their indexes): never swap a stale build in.
      const mine = await deps.db
        .selectFrom('search_reindex')
        .select('target')
        .where('target', '=', target)
        .executeTakeFirst();
      if (!mine) throw new Error(`rebuild ${target} was superseded by a newer one`);
      const replay = await deps.db
        .selectFrom('search_reindex_replay')
        .select('org_ids')
        .where('target', '=', target)
        .execute();
      const ids = [...new Set(replay.flatMap((r) => r.org_ids.map(Number)))];
      for (let i = 0; i < ids.length; i += 20_000) {
        const { rows, gone } = await readOrgRows(deps.db, ids.slice(i, i + 20_000));
        await writeDocuments(deps.meili, target, rows, gone);
      }
      await succeeded(deps.meili.swapIndexes([{ indexes: [deps.indexUid, target], rename: false }]));
      await deps.db.deleteFrom('search_reindex').where('target', '=', target).execute();
      return ids.length;
    });
    const replayed = swapped.locked ? swapped.value : 0;
    // `target` now holds the retired index.
    await succeeded(deps.meili.deleteIndex(target));
    return { target, documents, replayed, ms: Date.now() - started };
  } catch (error) {
    // Leave the live index as it was; drop the half-built one.
    await dropFailedBuild(deps, target);
    throw error;
  }
}
