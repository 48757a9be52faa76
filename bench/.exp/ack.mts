import { Meilisearch } from 'meilisearch';
import { Agent, Pool, request } from 'undici';
import { startMeiliServer } from '../../bin/local/meili-server.js';
import { succeeded } from '../../search/meili-client.js';

async function main() {
  const s = await startMeiliServer({ dataDir: '/tmp/sl-exp/meili', masterKey: 'exp-master-key-123456' });
  try {
    const m = new Meilisearch({ host: s.url, apiKey: s.masterKey });
    await succeeded(m.createIndex('t', { primaryKey: 'id' }));
    const docs = Array.from({ length: 20000 }, (_, i) => ({
      id: i,
      name: `acme ${i} widgets ltd`,
      n: `k${i}`,
    }));
    await succeeded(m.index('t').addDocuments(docs));
    const body = (limit: number) => JSON.stringify({ q: 'acme', limit, attributesToRetrieve: ['id'] });
    const pool = new Pool(s.url, { connections: 4, keepAliveTimeout: 60000 });
    const fresh = new Agent({ pipelining: 0 });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${s.masterKey}` };
    for (const limit of [20, 60, 220, 2000]) {
      for (const [name, fn] of [
        [
          'pool',
          async () =>
            (
              await pool.request({ path: '/indexes/t/search', method: 'POST', body: body(limit), headers })
            ).body.text(),
        ],
        [
          'fresh',
          async () =>
            (
              await request(`${s.url}/indexes/t/search`, {
                method: 'POST',
                body: body(limit),
                headers,
                dispatcher: fresh,
              })
            ).body.text(),
        ],
        [
          'fetch',
          async () =>
            (await fetch(`${s.url}/indexes/t/search`, { method: 'POST', body: body(limit), headers })).text(),
        ],
      ] as const) {
        const lat: number[] = [];
        for (let i = 0; i < 60; i++) {
          const t = performance.now();
          await fn();
          lat.push(performance.now() - t);
        }
        lat.sort((a, b) => a - b);
        console.log(
          limit,
          name,
          'p50',
          lat[30].toFixed(2),
          'p90',
          lat[54].toFixed(2),
          'max',
          lat[59].toFixed(2),
        );
      }
    }
  } finally {
    await s.stop();
  }
}
main();
