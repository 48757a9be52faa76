import { ensureOrgIndex, ORG_INDEX_LOAD_SETTINGS, ORG_INDEX_SETTINGS } from './index-definition.js';
import { bulkLoad, type FillDeps, type FillOptions, followOutbox } from './index-fill.js';
import {
  deleteOutboxRows,
  outboxSizes,
  registeredRebuilds,
  registerRebuild,
  replayedOrgIds,
  unregisterRebuild,
  withIndexerLock,
} from './index-sync.repository.js';
import { indexExists, succeeded } from './meili-client.js';
import { maxOrgId, readOrgRows } from './org-rows.read-model.js';
import { writeDocuments } from './org-sync.js';
import { checkStopped, unlessStopped } from './rebuild-stop.js';

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
 *
 * The live index may be of an older format (index-definition.ts): the swap replaces it whole.
 */
export interface ReindexDeps extends FillDeps {
  indexUid: string;
  log?: (line: string) => void;
}

export interface ReindexOptions extends FillOptions {
  /**
   * Aborted when the worker shuts down (or `bizdir reindex --wait` is interrupted): the build stops at
   * its next step or wait, its Meilisearch tasks are canceled and its half-built index dropped, and
   * RebuildStopped is thrown (rebuild-stop.ts). The live index and the outbox stay as they were; the
   * next rebuild starts over.
   */
  signal?: AbortSignal;
}

export interface ReindexResult {
  target: string;
  documents: number;
  replayed: number;
  ms: number;
}

/**
 * A new index's name suffix: the start time, and a few random characters so that replicas rebuilding
 * at the same moment register different names (search_reindex's key).
 */
const buildSuffix = (started: number) =>
  `${started.toString(36)}${Math.floor(Math.random() * 36 ** 3)
    .toString(36)
    .padStart(3, '0')}`;

/** Rows of the replay written into the new index per task, under the indexer lock before the swap. */
const REPLAY_CHUNK = 20_000;

/** The live index ready for a swap (created empty on a first run), its format said when older. */
async function liveIndexForSwap(deps: ReindexDeps): Promise<void> {
  if ((await ensureOrgIndex(deps.meili, deps.indexUid)) === 'older')
    deps.log?.(`${deps.indexUid} is of an older format: the new index replaces it`);
}

import { reasonOf } from '../shared/outage.js';

/** Drops registrations (and their half-built indexes) left by a rebuild that died. */
async function clearStaleRebuilds(deps: ReindexDeps): Promise<void> {
  for (const target of await registeredRebuilds(deps.db, deps.replica)) {
    if (target !== deps.indexUid) await deps.meili.deleteIndexIfExists(target);
    await unregisterRebuild(deps.db, target);
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
 * index) and smaller (the incremental path leaves the index's file larger than its used size).
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
  const target = `${deps.indexUid}__catchup_${buildSuffix(started)}`;
  const log = deps.log ?? (() => undefined);
  const { replica } = deps;
  const locked = await withIndexerLock(
    deps.db,
    false,
    async () => {
      const covered = await outboxSizes(deps.db, replica);
      // The Orgs the bulk load reads: every later insert has an outbox row that is not in `covered`.
      const upTo = options.follow ? await maxOrgId(deps.db) : undefined;
      await clearStaleRebuilds(deps);
      // Registered so that a crash leaves nothing behind: the next rebuild drops what is registered.
      await registerRebuild(deps.db, target, replica);
      try {
        await liveIndexForSwap(deps);
        await ensureOrgIndex(deps.meili, target, ORG_INDEX_LOAD_SETTINGS);
        const ids = covered.reduce((n, r) => n + r.id_count, 0);
        log(`search index ${ids} Org changes behind: building ${target} instead of syncing them`);
        const documents = await bulkLoad(deps, target, options, upTo);
        const seqs = new Set(covered.map((r) => r.seq));
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
        await deleteOutboxRows(deps.db, [...seqs], replica);
        await unregisterRebuild(deps.db, target);
        // `target` now holds the retired index.
        await succeeded(deps.meili.deleteIndex(target));
        return { documents, followed, covered: ids + followed };
      } catch (error) {
        await dropFailedBuild(deps, target);
        throw error;
      }
    },
    replica,
  );
  if (!locked.locked) return { ran: false, documents: 0, followed: 0, covered: 0, ms: Date.now() - started };
  return { ran: true, ...locked.value, ms: Date.now() - started };
}

/**
 * Best effort after a failed build: the build's own error is what the caller must see, and the next
 * rebuild clears what is left (clearStaleRebuilds); each step that fails is logged.
 */
async function dropFailedBuild(deps: ReindexDeps, target: string): Promise<void> {
  const log = deps.log ?? (() => undefined);
  const leftBehind = (what: string) => (err: unknown) =>
    log(`warning: could not ${what} after the failed rebuild (the next rebuild clears it): ${reasonOf(err)}`);
  await unregisterRebuild(deps.db, target).catch(leftBehind(`unregister ${target}`));
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
  const target = `${deps.indexUid}__build_${buildSuffix(started)}`;
  const { replica } = deps;
  const log = deps.log ?? (() => undefined);
  await liveIndexForSwap(deps);
  // The new index starts with the words only; filters and sorts are built once, after the bulk load
  // (cheaper than maintaining them document batch by document batch).
  await ensureOrgIndex(deps.meili, target, ORG_INDEX_LOAD_SETTINGS);
  await withIndexerLock(
    deps.db,
    true,
    async () => {
      await clearStaleRebuilds(deps);
      await registerRebuild(deps.db, target, replica);
    },
    replica,
  );
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
    const swapped = await withIndexerLock(
      deps.db,
      true,
      async () => {
        // A later `reindex` clears older registrations (and their indexes): never swap a stale build in.
        if (!(await registeredRebuilds(deps.db, replica)).includes(target))
          throw new Error(`rebuild ${target} was superseded by a newer one`);
        const ids = await replayedOrgIds(deps.db, target);
        for (let i = 0; i < ids.length; i += REPLAY_CHUNK) {
          const { rows, gone } = await readOrgRows(deps.db, ids.slice(i, i + REPLAY_CHUNK));
          await writeDocuments(deps.meili, target, rows, gone);
        }
        await succeeded(deps.meili.swapIndexes([{ indexes: [deps.indexUid, target], rename: false }]));
        await unregisterRebuild(deps.db, target);
        return ids.length;
      },
      replica,
    );
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
