import fp from 'fastify-plugin';
import { LOCAL_DEFAULTS } from '../../shared/config.js';
import { RecordCache } from './record-cache.js';
import { RenderedRecords } from './rendered-records.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Orgs and Locations as sent (JSON and ETag), for the conditional reads. */
    records: RenderedRecords;
  }
}

export const recordsPlugin = fp(
  async (app) => {
    const cache = app.config.recordCache
      ? new RecordCache(app.config.databaseUrl ?? LOCAL_DEFAULTS.databaseUrl, app.log)
      : null;
    await cache?.start();
    app.addHook('onClose', async () => {
      await cache?.close();
    });
    app.decorate('records', new RenderedRecords(app.db, app.pool, app.config.domainSuffix, cache));
  },
  { name: 'bizdir-records', dependencies: ['bizdir-infra'] },
);
