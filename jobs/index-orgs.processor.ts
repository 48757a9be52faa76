import type { Redis } from 'ioredis';
import { isUnavailable } from '../search/meili-client.js';
import type { SyncResult } from '../search/org-sync.js';
import { keepReplicaSet } from '../search/replica-set.repository.js';
import { meiliReplicasOf } from '../search/replicas.js';
import type { Config } from '../shared/config.js';
import { markOutage, reasonOf } from '../shared/outage.js';
import type { JobName } from '../shared/queues.js';
import { createQueue } from './queue.js';
import type { ProcessorFactory } from './registry.js';
import { type ReplicaIndexer, replicaIndexer } from './replica-indexer.js';
import { meiliDbPathOf, recordIndexBuilt } from './schedules/index-growth.js';
import { markReindexRunRunning, settleReindexRun } from './schedules/reindex-runs.repository.js';

export const INDEX_JOB: JobName<'index'> = 'index-orgs';

/** How often a worker sweeps the outbox even when nobody asked: catch-up after Meilisearch was down. */
export const SWEEP_EVERY_MS = 1_000;

/**
 * `index-orgs`: drains the search outbox into Meilisearch (search/org-sync.ts), into every replica
 * MEILI_URL names (jobs/replica-indexer.ts), side by side. The payload only says why; Postgres
 * (search_outbox, and each replica's pending rows) says what. A Meilisearch failure leaves that
 * replica's progress as it was; the job fails when no replica got through, and the job's retries and
 * the recurring sweep pick it up again.
 */
export const indexOrgsProcessor: ProcessorFactory<'index-orgs'> = (deps) => {
  const replicas = meiliReplicasOf(deps.config);
  const several = replicas.length > 1;
  const indexers = replicas.map((replica) =>
    replicaIndexer({ db: deps.db, config: deps.config, logger: deps.logger, replica, several }),
  );
  const indexUid = deps.config.meiliIndex;
  // The replicas' progress rows follow this worker's MEILI_URL; done before the first run, and again
  // after a failure.
  let replicaSetKept = false;
  const keepReplicas = async () => {
    if (replicaSetKept) return;
    const added = await keepReplicaSet(
      deps.db,
      replicas.flatMap((r) => (r.name === undefined ? [] : [r.name])),
    );
    if (added.length > 0) deps.logger.info({ replicas: added }, 'search replicas registered');
    replicaSetKept = true;
  };
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
   * (jobs/schedules/index-growth.ts): MEILI_DB_PATH is one Meilisearch's folder, the first replica's.
   * The build is done either way: a size that cannot be read is logged.
   */
  const recordBuilt = async (indexer: ReplicaIndexer) => {
    if (indexer !== indexers[0]) return;
    const dbPath = meiliDbPathOf(deps.config);
    try {
      const size = await recordIndexBuilt({ db: deps.db, meili: indexer.meili, indexUid, dbPath });
      if (typeof size === 'string')
        deps.logger.debug({ reason: size }, 'index size after the build not recorded');
      else deps.logger.info({ ...size }, 'index size after the build recorded');
    } catch (err) {
      deps.logger.warn({ err }, 'index size after the build not recorded');
    }
  };
  type IndexJob = Parameters<ReturnType<ProcessorFactory<'index-orgs'>>>[0];
  const progressOf = (job: IndexJob) => (done: number, total: number) => {
    // Best effort: progress is for the dashboard; the rebuild goes on without it.
    job
      .updateProgress({ done, total })
      .catch((err: unknown) => deps.logger.debug({ err, done, total }, 'rebuild progress not recorded'));
  };
  /** Runs `work` on one replica, telling its outage log how it went. */
  const tracked = async <T>(indexer: ReplicaIndexer, work: () => Promise<T>): Promise<T> => {
    try {
      const value = await work();
      indexer.outage.up();
      return value;
    } catch (error) {
      if (isUnavailable(error)) indexer.outage.down(error);
      throw error;
    }
  };
  /**
   * While a replica's index is rebuilt, the others (and that one's live index) keep syncing; a
   * replica that is away is left to its outage log here, so it does not stop the rebuild of another.
   */
  const syncAll = async () => {
    if (!several) return indexers[0]!.sync();
    const settled = await Promise.allSettled(indexers.map((i) => tracked(i, i.sync)));
    for (const s of settled) if (s.status === 'rejected' && !isUnavailable(s.reason)) throw s.reason;
    return undefined;
  };
  /** `bizdir reindex`: each replica in turn, so the others serve the API while one is rebuilt. */
  const rebuildAll = async (job: IndexJob, signal: AbortSignal | undefined) => {
    const scheduled = job.data.scheduleRun;
    if (scheduled !== undefined) await markReindexRunRunning(deps.db, scheduled);
    try {
      const results = [];
      const failed: string[] = [];
      let firstError: unknown;
      for (const indexer of indexers) {
        try {
          const result = await tracked(indexer, () =>
            indexer.rebuild({ sync: syncAll, onProgress: progressOf(job), signal }),
          );
          deps.logger.info(
            { ...result, ...(several ? { replica: indexer.replica.label } : {}) },
            'search index rebuilt',
          );
          await recordBuilt(indexer);
          results.push(result);
        } catch (error) {
          // One replica failing does not keep the others on their old index; the job fails after.
          if (!several || signal?.aborted) throw error;
          deps.logger.warn(
            { replica: indexer.replica.label, err: reasonOf(error) },
            'search index not rebuilt',
          );
          failed.push(`${indexer.replica.label}: ${reasonOf(error)}`);
          firstError ??= error;
        }
      }
      if (firstError !== undefined) {
        throw new Error(`search index not rebuilt on ${failed.join('; ')}`, { cause: firstError });
      }
      const documents = results[0]?.documents ?? 0;
      const replayed = results.reduce((n, r) => n + r.replayed, 0);
      const ms = results.reduce((n, r) => n + r.ms, 0);
      if (scheduled !== undefined) {
        const reason = `rebuilt: ${documents} Orgs, ${replayed} replayed, ${(ms / 1000).toFixed(1)} s${several ? ` on ${results.length} replicas` : ''}`;
        await settleReindexRun(deps.db, scheduled, {
          status: 'succeeded',
          reason,
          result: { ...results[0]!, replayed, ms },
        });
      }
      return results.length === 1 ? results[0]! : { documents, replayed, ms, replicas: results.length };
    } catch (error) {
      // Its last attempt: the scheduled run must not stay "running" for ever.
      if (scheduled !== undefined && job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
        const reason = error instanceof Error ? error.message : String(error);
        await settleReindexRun(deps.db, scheduled, { status: 'failed', reason });
      }
      throw error;
    }
  };
  /** Every replica caught up side by side; fails only when none got through. */
  const catchUpAll = async (job: IndexJob, signal: AbortSignal | undefined) => {
    const options = {
      reason: job.data.reason,
      signal,
      onProgress: progressOf(job),
    };
    const settled = await Promise.allSettled(
      indexers.map((indexer) =>
        tracked(indexer, () => indexer.catchUp({ ...options, onBuilt: () => recordBuilt(indexer) })),
      ),
    );
    const done = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (done.length === 0 || (failure && !isUnavailable(failure.reason))) throw failure!.reason;
    if (done.length === 1 && !several) return done[0]!;
    return done.reduce<SyncResult>(
      (sum, r) => ({
        ran: sum.ran || r.ran,
        indexed: sum.indexed + r.indexed,
        removed: sum.removed + r.removed,
        batches: sum.batches + r.batches,
      }),
      { ran: false, indexed: 0, removed: 0, batches: 0 },
    );
  };
  return async (job, _token, signal) => {
    try {
      await keepReplicas();
      return job.data.rebuild ? await rebuildAll(job, signal) : await catchUpAll(job, signal);
    } catch (error) {
      if (!isUnavailable(error)) throw error;
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
