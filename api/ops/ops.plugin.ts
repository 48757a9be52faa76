import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { LOCAL_DEFAULTS } from '../../shared/config.js';
import { watchOutages } from '../../shared/outage.js';
import { QUEUE_NAMES } from '../../shared/queues.js';
import { createRedis } from '../../shared/redis.js';
import { adminGuard } from './admin-auth.js';
import { type ApiMetrics, createMetrics } from './metrics.js';

export const DASHBOARD_PATH = '/admin/queues';

/** The admin-only routes, in their own context so the guard and Bull Board's decorators stay there. */
async function adminRoutes(
  app: FastifyInstance,
  opts: { token: string; metrics: ApiMetrics; queues: Queue[] },
) {
  app.addHook('onRequest', adminGuard(opts.token));

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    const text = await opts.metrics.registry.metrics();
    return reply.type(opts.metrics.registry.contentType).send(text);
  });

  const board = new FastifyAdapter();
  createBullBoard({
    queues: opts.queues.map((q) => new BullMQAdapter(q, { readOnlyMode: false })),
    serverAdapter: board,
    options: { uiConfig: { boardTitle: 'bizdir queues' } },
  });
  board.setBasePath(DASHBOARD_PATH);
  await app.register(board.registerPlugin(), { prefix: DASHBOARD_PATH });
}

/**
 * Operations: request metrics for every route, and (only when ADMIN_TOKEN is configured) `/metrics`
 * and the Bull Board queue dashboard at /admin/queues. Registered by buildApp after the infra and
 * credits plugins, whose `db`, `redis` and `config` it uses.
 */
export const opsPlugin = fp(
  async (app) => {
    // The dashboard and the queue gauges get a connection of their own, so a Redis outage never
    // touches the API's credit counters. Commands are bounded by commandTimeout and one retry; the
    // offline queue stays on because with it off, ioredis's own reconnect ready-check rejects
    // unhandled while Redis is away.
    const connection = createRedis(app.config.redisUrl ?? LOCAL_DEFAULTS.redisUrl, 'producer', {
      commandTimeout: 2_000,
      enableOfflineQueue: true,
    });
    const dashboardOutage = watchOutages(connection, app.log, 'Redis (queue dashboard)');
    const queues = QUEUE_NAMES.map((name) => {
      const queue = new Queue(name, { connection, prefix: app.config.queuePrefix });
      // The dashboard's connection: its outages are logged once each (the API's own are in infra).
      queue.on('error', (err) => dashboardOutage.down(err));
      return queue;
    });
    const metrics = createMetrics({
      db: app.db,
      queues,
      onCollectError: (what, err) => app.log.warn({ err, what }, 'metrics: could not read a figure'),
    });
    app.addHook('onClose', async () => {
      await Promise.all(queues.map((q) => q.close()));
      connection.disconnect();
    });

    app.addHook('onResponse', async (request, reply) => {
      // The route pattern, never the raw URL: one series per route, not one per Org domain.
      const route = request.routeOptions.url ?? 'unmatched';
      const status = reply.statusCode;
      metrics.observeRequest({ method: request.method, route, status }, reply.elapsedTime / 1000);
      if (status === 200 && request.routeOptions.config?.metered) metrics.creditCharged(route);
    });

    const token = app.config.adminToken;
    if (token) await app.register(adminRoutes, { token, metrics, queues });
  },
  { name: 'bizdir-ops', dependencies: ['bizdir-infra'] },
);
