import { Queue } from 'bullmq';
import { SCHEDULE_QUEUE, type SchedulerQueue } from '../../jobs/schedules/scheduler.js';
import { createRedis } from '../../shared/redis.js';
import { cliConfig, redisUrlOf } from '../cli-context.js';

/**
 * Applies a schedule change to BullMQ right away when Redis is up. Postgres already holds the
 * change, so an unreachable Redis is not an error: workers reconcile when they start.
 * Returns false when Redis could not be reached.
 */
export async function withSchedulerQueue(fn: (queue: SchedulerQueue) => Promise<unknown>): Promise<boolean> {
  const config = cliConfig();
  const connection = createRedis(redisUrlOf(config), 'producer', { lazyConnect: true });
  try {
    await connection.connect();
  } catch {
    connection.disconnect();
    return false;
  }
  const queue = new Queue(SCHEDULE_QUEUE, { connection, prefix: config.queuePrefix });
  // A connection error while the change is applied: said once; the command's own result says the rest.
  let warned = false;
  queue.on('error', (err) => {
    if (warned) return;
    warned = true;
    process.stderr.write(`bizdir: warning: Redis connection error: ${err.message}\n`);
  });
  try {
    await fn(queue);
    return true;
  } finally {
    await queue.close();
    connection.disconnect();
  }
}
