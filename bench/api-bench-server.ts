import Fastify from 'fastify';
import { buildApp } from '../api/app.js';
import { loadConfig } from '../shared/config.js';
import { createDb } from '../shared/db.js';
import { parseDomain } from '../shared/domains.js';

/**
 * One side of the API benchmark, in its own process (so the load generator does not share its event
 * loop): `bare` is a plain Fastify route per record kind doing one primary-key lookup,
 * `select row_to_json(o) from orgs o where id = bizdir_uid_id($1) and bizdir_uid(id) = $1` (`locations l` and its `uid` column for a Location), with no auth,
 * credits, schemas or hooks; `app` is the real API from buildApp. Prints `listening <port>` when ready.
 */
const mode = process.argv[2];
const config = loadConfig();

const stopOn = (close: () => Promise<unknown>) => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => close().then(() => process.exit(0)));
  }
};

if (mode === 'bare') {
  const { pool, close } = createDb(config.databaseUrl!, { max: 20, applicationName: 'bizdir-bench-bare' });
  const app = Fastify({ logger: false });
  const lookup = (table: 'orgs' | 'locations', kind: 'org' | 'location', field: string) =>
    app.get<{ Params: { domain: string } }>(`/v1/${kind}/:domain`, async (request, reply) => {
      const ref = parseDomain(request.params.domain, config.domainSuffix);
      if (ref?.kind !== kind) return reply.code(404).send({ code: 404 });
      const { rows } = await pool.query(
        // Orgs store no uid since migration 0023: it is bizdir_uid(id); Locations still store theirs.
        `select row_to_json(o) as r from ${table} o where id = bizdir_uid_id($1) and ${table === 'orgs' ? 'bizdir_uid(id)' : 'uid'} = $1`,
        [ref.uid],
      );
      if (!rows[0]) return reply.code(404).send({ code: 404 });
      return { [field]: rows[0].r };
    });
  lookup('orgs', 'org', 'org');
  lookup('locations', 'location', 'location');
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
