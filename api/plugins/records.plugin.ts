import fp from 'fastify-plugin';
import { RenderedRecords } from '../read-models/rendered-records.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Orgs and Locations as sent (JSON and ETag), for the conditional reads. */
    records: RenderedRecords;
  }
}

export const recordsPlugin = fp(
  async (app) => {
    app.decorate('records', new RenderedRecords(app.db, app.pool, app.config.domainSuffix));
  },
  { name: 'bizdir-records', dependencies: ['bizdir-infra'] },
);
