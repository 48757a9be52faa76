import type { Meilisearch } from 'meilisearch';
import { setPartJobIds } from '../../ingest/import-runs/import-parts.repository.js';
import { getRun, setRunJobId } from '../../ingest/import-runs/import-runs.repository.js';
import { partsOf } from '../../ingest/import-runs/import-runs.state.js';
import { createMeiliClient, INDEXING_TIMEOUT_MS, meiliConnectionOf } from '../../search/meili-client.js';
import { meiliReplicasOf } from '../../search/replicas.js';
import { driftCount, verifyReplicas } from '../../search/verify.js';
import { INDEX_JOB } from '../index-orgs.processor.js';
import { createFlowProducer, createQueue, enqueueImportParts, enqueueImportRun } from '../queue.js';
import type { ProcessorFactory } from '../registry.js';
import { buildsRegistered } from './index-builds.repository.js';
import { indexGrowth, meiliDbPathOf } from './index-growth.js';
import { processRunSchedule } from './scheduler.js';

/** A registered build older than this is one a dead process left behind (the next build clears it). */
const BUILD_ALIVE_MS = 6 * 3600_000;

/**
 * Waiting index jobs looked through for a rebuild: an import queues one small job per batch, and
 * a rebuild queued behind more than this many is not worth a longer scan.
 */
const PENDING_LOOKED_AT = 1_000;

/** Job id of a scheduled reindex run's rebuild: one job per run, however often it is enqueued. */
export const reindexJobId = (runId: number) => `schedule-reindex-run-${runId}`;

/**
 * `run-schedule`: one firing of a schedule (BullMQ job scheduler `schedule:<name>`). It decides
 * and records; an import itself is the ordinary `import-feed` job (with its `import-part` jobs for
 * a run of several parts, as `bizdir import` queues them) of an ordinary run row, a rebuild the
 * ordinary `index-orgs` rebuild job on the index queue.
 */
export const runScheduleProcessor: ProcessorFactory<'run-schedule'> = (deps) => {
  // Shares the worker's connection: enqueueing from inside a job must wait for Redis, not fail.
  const options = { connection: deps.connection, prefix: deps.config.queuePrefix };
  const importQueue = createQueue('import', options);
  const indexQueue = createQueue('index', options);
  const flows = createFlowProducer(deps.connection, deps.config.queuePrefix);
  let meili: Meilisearch | undefined;
  const meiliClient = () => {
    meili ??= createMeiliClient(meiliConnectionOf(deps.config), INDEXING_TIMEOUT_MS);
    return meili;
  };
  let replicas: { label: string; meili: Meilisearch }[] | undefined;
  const replicaClients = () => {
    replicas ??= meiliReplicasOf(deps.config).map((r, i) => ({
      label: r.label,
      meili: i === 0 ? meiliClient() : createMeiliClient(r.conn, INDEXING_TIMEOUT_MS),
    }));
    return replicas;
  };
  const indexUid = deps.config.meiliIndex;
  return async (job) => {
    const log = deps.logger.child({ schedule: job.data.schedule, jobId: job.id });
    return processRunSchedule(
      {
        db: deps.db,
        log,
        async enqueueImport(runId) {
          const run = await getRun(deps.db, runId);
          const parts = run ? await partsOf(deps.db, run) : [];
          let jobId: string;
          if (parts.length > 1) {
            const queued = await enqueueImportParts(flows, runId, parts);
            await setPartJobIds(deps.db, runId, queued.partJobIds);
            jobId = queued.jobId;
          } else jobId = await enqueueImportRun(importQueue, runId);
          await setRunJobId(deps.db, runId, jobId);
          return jobId;
        },
        async enqueueRebuild(runId) {
          const added = await indexQueue.add(
            INDEX_JOB,
            { reason: 'schedule', rebuild: true, scheduleRun: runId },
            { jobId: reindexJobId(runId) },
          );
          return added.id ?? reindexJobId(runId);
        },
        async rebuildUnderWay() {
          const jobs = await indexQueue.getJobs(
            ['active', 'waiting', 'prioritized', 'delayed', 'paused'],
            0,
            PENDING_LOOKED_AT,
          );
          const rebuild = jobs.find((j) => j?.data.rebuild);
          if (rebuild) return `rebuild job ${rebuild.id} is ${await rebuild.getState()}`;
          const builds = await buildsRegistered(deps.db, BUILD_ALIVE_MS);
          return builds.length > 0 ? `index ${builds.join(', ')} is being built` : null;
        },
        // Every replica is compared; the first with drift is the run's report (else the first's).
        verify: async () => {
          const reports = await verifyReplicas(deps.db, replicaClients(), indexUid);
          return (reports.find((r) => driftCount(r.report) > 0) ?? reports[0]!).report;
        },
        indexGrowth: () =>
          indexGrowth({ db: deps.db, meili: meiliClient(), indexUid, dbPath: meiliDbPathOf(deps.config) }),
      },
      job,
    );
  };
};
