import type { FastifyPluginAsync } from 'fastify';
import Type from 'typebox';
import { pingDatabase } from '../../shared/db.js';
import { ErrorSchema } from '../http/common.schema.js';
import { errorBody } from '../http/error-mapping.js';

const Status = Type.Object({ status: Type.String() });

/** Probes for orchestrators: no key, no credits. */
export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get(
    '/healthz',
    { schema: { tags: ['health'], summary: 'The process is up', response: { 200: Status } } },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        summary: 'The database and the queue answer',
        response: { 200: Status, 503: ErrorSchema },
      },
    },
    async (request, reply) => {
      const checks = await Promise.allSettled([pingDatabase(app.db), app.redis.ping()]);
      // Named to clients as what they are for, not by product (the log names the product).
      const down = checks.flatMap((c, i) =>
        c.status === 'rejected' ? [i === 0 ? 'database' : 'queue'] : [],
      );
      if (down.length === 0) return { status: 'ok' };
      // Probed every few seconds: the outage itself is logged once, with its end, by its tracker.
      checks.forEach((c, i) => {
        if (c.status === 'rejected') app.outages[i === 0 ? 'postgres' : 'redis'].down(c.reason);
      });
      request.log.debug({ down }, 'not ready');
      return reply.code(503).send(errorBody(503, `${down.join(' and ')} not reachable`));
    },
  );
};
