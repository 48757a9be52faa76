import Fastify from 'fastify';
import { buildApp } from '../api/app.js';
import { findOrgByRef } from '../api/read-models/org.read-model.js';
import { toOrgView } from '../api/views/org.view.js';
import { loadConfig } from '../shared/config.js';
import { createDb } from '../shared/db.js';
import { parseDomain } from '../shared/domains.js';

/**
 * One side of the API benchmark, in its own process (so the load generator does not share its event
 * loop): `bare` is a plain Fastify route doing the same single indexed Org query with no auth, credits,
 * schemas or hooks; `app` is the real API from buildApp. Prints `listening <port>` when ready.
 */
const mode = process.argv[2];
const config = loadConfig();

const stopOn = (close: () => Promise<unknown>) => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => close().then(() => process.exit(0)));
  }
};

if (mode === 'bare') {
  const { db, close } = createDb(config.databaseUrl!, { max: 20, applicationName: 'bizdir-bench-bare' });
  const app = Fastify({ logger: false });
  app.get<{ Params: { domain: string } }>('/v1/org/:domain', async (request, reply) => {
    const ref = parseDomain(request.params.domain, config.domainSuffix);
    if (ref?.kind !== 'org' && ref?.kind !== 'org-public') return reply.code(404).send({ code: 404 });
    const org = await findOrgByRef(db, ref);
    if (!org) return reply.code(404).send({ code: 404 });
    return { org: toOrgView(org, config.domainSuffix) };
  });
  app.addHook('onClose', close);
  await app.listen({ host: '127.0.0.1', port: 0 });
  stopOn(() => app.close());
  console.log(`listening ${(app.server.address() as { port: number }).port}`);
} else if (mode === 'app') {
  const app = await buildApp({ config });
  await app.listen({ host: '127.0.0.1', port: 0 });
  stopOn(() => app.close());
  console.log(`listening ${(app.server.address() as { port: number }).port}`);
} else {
  throw new Error('usage: api-bench-server.ts bare|app');
}
