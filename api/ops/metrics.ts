import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../../shared/db.js';
import { IMPORT_ROW_OUTCOMES } from '../../shared/tables.js';
import { importRowTotals, importRunCounts } from './import-runs.read-model.js';
import { indexLagSeconds, pendingIndexChanges } from './search-outbox.read-model.js';

/** What gauges read at scrape time. A queue is anything with BullMQ's getJobCounts. */
export interface MetricsSources {
  db: Db;
  queues: ReadonlyArray<{ name: string; getJobCounts(...types: string[]): Promise<Record<string, number>> }>;
  onCollectError?: (what: string, error: unknown) => void;
}

const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'paused', 'failed', 'completed'];

export interface ApiMetrics {
  registry: Registry;
  observeRequest(labels: { method: string; route: string; status: number }, seconds: number): void;
  creditCharged(route: string): void;
}

/**
 * Prometheus metrics for one API app. Its own registry (not prom-client's global one), so several
 * apps in one process (tests) never clash. Request metrics are counted as requests end; import,
 * queue and index figures are read from Postgres and Redis when /metrics is scraped, so they are
 * right whichever process did the work.
 */
export function createMetrics(sources: MetricsSources): ApiMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'bizdir_' });
  const report = (what: string, error: unknown) => sources.onCollectError?.(what, error);

  const requests = new Counter({
    name: 'bizdir_http_requests_total',
    help: 'HTTP requests answered, by route pattern and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'bizdir_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route pattern and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const credits = new Counter({
    name: 'bizdir_credits_charged_total',
    help: 'Data credits charged (metered 200 responses), by route pattern',
    labelNames: ['route'],
    registers: [registry],
  });

  new Gauge({
    name: 'bizdir_import_rows',
    help: 'Feed rows processed by all import runs, by feed and outcome',
    labelNames: ['feed', 'outcome'],
    registers: [registry],
    async collect() {
      this.reset();
      try {
        for (const row of await importRowTotals(sources.db))
          for (const o of IMPORT_ROW_OUTCOMES) this.set({ feed: row.feed, outcome: o }, row[o]);
      } catch (error) {
        report('import rows', error);
      }
    },
  });

  new Gauge({
    name: 'bizdir_import_runs',
    help: 'Import runs by feed and status',
    labelNames: ['feed', 'status'],
    registers: [registry],
    async collect() {
      this.reset();
      try {
        for (const row of await importRunCounts(sources.db))
          this.set({ feed: row.feed, status: row.status }, row.n);
      } catch (error) {
        report('import runs', error);
      }
    },
  });

  new Gauge({
    name: 'bizdir_queue_jobs',
    help: 'BullMQ jobs by queue and state',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const queue of sources.queues) {
        try {
          const counts = await queue.getJobCounts(...JOB_STATES);
          for (const state of JOB_STATES) this.set({ queue: queue.name, state }, counts[state] ?? 0);
        } catch (error) {
          report(`queue ${queue.name}`, error);
        }
      }
    },
  });

  // Index lag: Org changes committed in Postgres but not yet confirmed by Meilisearch wait in
  // search_outbox; the age of the oldest is how far search is behind.
  new Gauge({
    name: 'bizdir_index_lag_seconds',
    help: 'Age of the oldest Org change not yet in the search index (0 when none waits)',
    registers: [registry],
    async collect() {
      try {
        this.set(await indexLagSeconds(sources.db));
      } catch (error) {
        report('index lag', error);
      }
    },
  });
  new Gauge({
    name: 'bizdir_index_pending_changes',
    help: 'Org change batches waiting to reach the search index',
    registers: [registry],
    async collect() {
      try {
        this.set(await pendingIndexChanges(sources.db));
      } catch (error) {
        report('index pending', error);
      }
    },
  });

  return {
    registry,
    observeRequest(labels, seconds) {
      const l = { method: labels.method, route: labels.route, status: String(labels.status) };
      requests.inc(l);
      latency.observe(l, seconds);
    },
    creditCharged(route) {
      credits.inc({ route });
    },
  };
}
