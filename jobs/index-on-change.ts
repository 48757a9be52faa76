import { LOCAL_DEFAULTS } from '../shared/config.js';
import { PgListener, RECORDS_CHANNEL } from '../shared/pg-listener.js';
import { INDEX_JOB } from './index-orgs.processor.js';
import { createQueue } from './queue.js';
import type { WorkerDeps } from './registry.js';

export interface IndexOnChange {
  stop(): Promise<void>;
}

/**
 * Asks for an index run as soon as a commit touches the records, whoever wrote them (an import, an
 * operator's SQL): the worker LISTENs on the channel every committed write to the record tables
 * notifies, and enqueues `index-orgs`. The changed Org ids are already in search_outbox (same
 * transaction), so a run that starts after the notification sees them. Notifications that arrive
 * while an enqueue is on its way are folded into it: that job starts after them.
 *
 * The once-a-second sweep stays, for what a lost listening connection misses.
 */
export function startIndexOnChange(deps: WorkerDeps): IndexOnChange {
  const queue = createQueue('index', { connection: deps.connection, prefix: deps.config.queuePrefix });
  const log = deps.logger.child({ component: 'index-on-change' });
  let enqueuing = false;
  const listener = new PgListener({
    databaseUrl: deps.config.databaseUrl ?? LOCAL_DEFAULTS.databaseUrl,
    channel: RECORDS_CHANNEL,
    applicationName: 'bizdir-worker-index-on-change',
    name: 'search index trigger',
    log,
    onNotify: () => {
      if (enqueuing) return;
      enqueuing = true;
      queue
        .add(INDEX_JOB, { reason: 'change' }, { removeOnComplete: 100, removeOnFail: 100 })
        // Redis away: that outage is the queue's; the sweep catches the change up when it is back.
        .catch((err: unknown) => log.debug({ err }, 'index run not enqueued; the sweep will do it'))
        .finally(() => {
          enqueuing = false;
        });
    },
    meanwhile: 'changes reach the search index with the once-a-second sweep until it is back',
    resumed: 'changes reach the search index at once again',
  });
  void listener.start();
  return {
    async stop() {
      await listener.close();
      await queue.close();
    },
  };
}
