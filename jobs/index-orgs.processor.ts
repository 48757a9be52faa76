import type { Redis } from 'ioredis';
import { importWriting, planCatchUp } from '../search/catch-up.js';
import { ensureOrgIndex, IndexOutdatedError } from '../search/index-definition.js';
import {
  createMeiliClient,
  INDEXING_TIMEOUT_MS,
  isUnavailable,
  meiliConnectionOf,
} from '../search/meili-client.js';
import { syncOutbox } from '../search/org-sync.js';
import { rebuildForBacklog, reindex } from '../search/reindex.js';
import type { Config } from '../shared/config.js';
import { markOutage, outageTracker } from '../shared/outage.js';
import type { JobName } from '../shared/queues.js';
import { createQueue } from './queue.js';
import type { ProcessorFactory } from './registry.js';
import { meiliDbPathOf, recordIndexBuilt } from './schedules/index-growth.js';
import { markReindexRunRunning, settleReindexRun } from './schedules/reindex-runs.repository.js';

export const INDEX_JOB: JobName<'index'> = 'index-orgs';

/** How often a worker sweeps the outbox even when nobody asked: catch-up after Meilisearch was down. */
export const SWEEP_EVERY_MS = 1_000;

/**
 * `index-orgs`: drains the search outbox into Meilisearch (search/org-sync.ts). The payload
 * only says why; Postgres (search_outbox) says what. A Meilisearch failure fails the job and leaves
 * the outbox as it was; the job's retries and the recurring sweep pick it up again.
 */
export const indexOrgsProcessor: ProcessorFactory<'index-orgs'> = (deps) => {
  const meili = createMeiliClient(meiliConnectionOf(deps.config), INDEXING_TIMEOUT_MS);
  const indexUid = deps.config.meiliIndex;
  let settingsApplied = false;
  // Meilisearch away: one line when the sweep first meets it, one when a sweep gets through again
  // (the failed sweeps in between are logged at debug by the worker).
  const meiliOutage = outageTracker(deps.logger, 'Meilisearch');
  // The sweep is reconciled when a worker for this queue starts (idempotent across workers).
  const queue = createQueue('index', { connection: deps.connection, prefix: deps.config.queuePrefix });
  queue
    .upsertJobScheduler(
      INDEX_JOB,
      { every: SWEEP_EVERY_MS },
      { name: INDEX_JOB, data: { reason: 'sweep' }, opts: { removeOnComplete: 100, removeOnFail: 100 } },
    )
    .catch((err: Error) => deps.logger.warn({ err: err.message }, 'index sweep not scheduled'));
  /**
   * The index's size right after a build, which a reindex schedule's growth threshold compares with
   * (jobs/schedules/index-growth.ts). The build is done either way: a size that cannot be read is logged.
   */
  const recordBuilt = async () => {
    const dbPath = meiliDbPathOf(deps.config);
    try {
      const size = await recordIndexBuilt({ db: deps.db, meili, indexUid, dbPath });
      if (typeof size === 'string')
        deps.logger.debug({ reason: size }, 'index size after the build not recorded');
      else deps.logger.info({ ...size }, 'index size after the build recorded');
    } catch (err) {
      deps.logger.warn({ err }, 'index size after the build not recorded');
    }
  };
  let waitingLogged = false;
  // An index of an older format gets no writes (the changes wait in the outbox) until `bizdir reindex`
  // replaces it: said once, and again if it comes back after a run got through.
  let olderLogged = false;
  const logOlder = () => {
    if (olderLogged) return;
    olderLogged = true;
    deps.logger.warn({ index: indexUid }, new IndexOutdatedError(indexUid).message);
  };
  type IndexJob = Parameters<ReturnType<ProcessorFactory<'index-orgs'>>>[0];
  const progressOf = (job: IndexJob) => (done: number, total: number) => {
    // Best effort: progress is for the dashboard; the rebuild goes on without it.
    job
      .updateProgress({ done, total })
      .catch((err: unknown) => deps.logger.debug({ err, done, total }, 'rebuild progress not recorded'));
  };
  const run = async (job: IndexJob, signal: AbortSignal | undefined) => {
    if (!settingsApplied) {
      if ((await ensureOrgIndex(meili, indexUid)) === 'older') logOlder();
      settingsApplied = true;
    }
    const sync = () => syncOutbox({ db: deps.db, meili, indexUid });
    if (job.data.rebuild) {
      const scheduled = job.data.scheduleRun;
      if (scheduled !== undefined) await markReindexRunRunning(deps.db, scheduled);
      try {
        const result = await reindex(
          { db: deps.db, meili, indexUid, log: (line) => deps.logger.info(line) },
          {
            sync,
            onProgress: progressOf(job),
            ...(signal ? { signal } : {}),
          },
        );
        deps.logger.info({ ...result }, 'search index rebuilt');
        await recordBuilt();
        if (scheduled !== undefined) {
          const reason = `rebuilt: ${result.documents} Orgs, ${result.replayed} replayed, ${(result.ms / 1000).toFixed(1)} s`;
          await settleReindexRun(deps.db, scheduled, { status: 'succeeded', reason, result: { ...result } });
        }
        return result;
      } catch (error) {
        // Its last attempt: the scheduled run must not stay "running" for ever.
        if (scheduled !== undefined && job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
          const reason = error instanceof Error ? error.message : String(error);
          await settleReindexRun(deps.db, scheduled, { status: 'failed', reason });
        }
        throw error;
      }
    }
    // A backlog too large to sync well (a bulk import) is rebuilt: after the import, or during it.
    const plan = await planCatchUp(deps.db, meili, indexUid, deps.config.searchRebuildBacklog);
    if (plan.action === 'wait' && !deps.config.searchRebuildDuringImport) {
      if (!waitingLogged) {
        deps.logger.info(
          { pending: plan.pending, documents: plan.documents, importsRunning: plan.importsRunning },
          'search index far behind: waiting for the running import, then rebuilding it',
        );
        waitingLogged = true;
      }
      return { ran: false, indexed: 0, removed: 0, batches: 0, waiting: plan.pending };
    }
    waitingLogged = false;
    if (plan.action !== 'sync') {
      // `wait` with SEARCH_REBUILD_DURING_IMPORT: the new index follows the import until it ends.
      const follow = plan.action === 'wait' ? { follow: () => importWriting(deps.db) } : {};
      const rebuilt = await rebuildForBacklog(
        { db: deps.db, meili, indexUid, log: (line) => deps.logger.info(line) },
        { onProgress: progressOf(job), ...follow, ...(signal ? { signal } : {}) },
      );
      if (rebuilt.ran) {
        deps.logger.info({ reason: job.data.reason, ...rebuilt }, 'search index rebuilt to catch up');
        await recordBuilt();
      }
    }
    // The backlog can grow past the threshold while this run drains it: look again as it goes.
    const result = await syncOutbox(
      { db: deps.db, meili, indexUid },
      {
        keepGoing: async () =>
          !signal?.aborted &&
          (await planCatchUp(deps.db, meili, indexUid, deps.config.searchRebuildBacklog)).action === 'sync',
      },
    );
    if (result.olderIndex) logOlder();
    else if (result.ran) olderLogged = false;
    if (result.batches > 0) deps.logger.info({ reason: job.data.reason, ...result }, 'search index updated');
    return result;
  };
  return async (job, _token, signal) => {
    try {
      const result = await run(job, signal);
      meiliOutage.up();
      return result;
    } catch (error) {
      if (!isUnavailable(error)) throw error;
      meiliOutage.down(error);
      throw markOutage(error);
    }
  };
};

/**
 * The hook the importer calls after each committed batch (WorkerDeps.orgsChanged): asks for an
 * index run. The changed ids are already in search_outbox (written by trigger in the same
 * transaction), so the job carries none.
 */
export function indexOrgsNotifier(config: Pick<Config, 'queuePrefix'>, connection: Redis) {
  let queue: ReturnType<typeof createQueue<'index'>> | undefined;
  return async (orgIds: number[]): Promise<void> => {
    if (orgIds.length === 0) return;
    queue ??= createQueue('index', { connection, prefix: config.queuePrefix });
    await queue.add(INDEX_JOB, { reason: 'import' }, { removeOnComplete: 100, removeOnFail: 100 });
  };
}
