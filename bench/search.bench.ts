import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { createAccount } from '../api/accounts/account.service.js';
import { buildApp } from '../api/app.js';
import { createWorkerDeps, startWorkers } from '../jobs/worker.js';
import { createMeiliClient, ensureOrgIndex, INDEXING_TIMEOUT_MS, succeeded } from '../search/meili-client.js';
import { foldName } from '../search/name-text.js';
import { toOrgDocument } from '../search/org-document.js';
import { reindex } from '../search/reindex.js';
import { searchOrgs } from '../search/search-orgs.js';
import { loadConfig } from '../shared/config.js';
import { createDb, migrateToLatest } from '../shared/db.js';
import { createLogger } from '../shared/logger.js';
import { createRedis } from '../shared/redis.js';
import { startMeiliServer } from '../shared/services/meili-server.js';
import {
  createBenchDatabase,
  createTrigramIndex,
  dropBenchDatabase,
  ilikeSearch,
  insertOrgs,
} from './search-data.js';

/**
 * Search benchmark: `npm run bench:search -- [N]` (default 1,000,000 Orgs).
 *
 * One run: N generated Orgs inserted into the real schema; a fixed query mix, all sort=name, timed
 * as (a) Postgres ILIKE '%q%' with a pg_trgm index (page + exact count), (b) Meilisearch's CONTAINS
 * filter, (c) bizdir's GET /v1/org/search over HTTP (auth, credits, Meilisearch, Org objects from
 * Postgres); the full index build (`reindex`) against posting the same documents straight to
 * Meilisearch; and how long a committed rename takes to be found through the endpoint. Uses its own
 * database, Meilisearch (private, in bench/out) and queue prefix; all removed at the end.
 * Env: BENCH_PG_ADMIN_URL, REDIS_URL, BENCH_ROUNDS (default 8).
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.argv[2] ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const ADMIN = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const tag = `${process.pid}_${Date.now().toString(36)}`;
const dbName = `bizdir_bench_search_${tag}`;
const prefix = `bizdir-bench-${tag}`;
const outDir = path.join(ROOT, 'bench/out');
const meiliDir = path.join(outDir, `meili-${tag}`);
const INDEX = 'orgs';
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  return {
    n: s.length,
    p50: +pct(s, 50).toFixed(2),
    p99: +pct(s, 99).toFixed(2),
    max: +s[s.length - 1]!.toFixed(2),
  };
}

async function timed(samples: number[], fn: () => Promise<unknown>): Promise<void> {
  const t = performance.now();
  await fn();
  samples.push(performance.now() - t);
}

async function main() {
  mkdirSync(outDir, { recursive: true });
  const dbUrl = await createBenchDatabase(ADMIN, dbName);
  const { db, close } = createDb(dbUrl, { max: 10, applicationName: 'bizdir-bench-search' });
  const meiliServer = await startMeiliServer({ dataDir: meiliDir, masterKey: `bench-${tag}-key` });
  const conn = { url: meiliServer.url, apiKey: meiliServer.masterKey };
  const meili = createMeiliClient(conn, INDEXING_TIMEOUT_MS);
  const cleanups: (() => Promise<unknown>)[] = [];
  const result: Record<string, unknown> = { orgs: N, rounds: ROUNDS, startedAt: new Date().toISOString() };
  try {
    await migrateToLatest(db);
    let t = Date.now();
    await insertOrgs(db, N, (done) => done % 200_000 === 0 && log(`inserted ${done} Orgs`));
    log(`inserted ${N} Orgs in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    t = Date.now();
    await createTrigramIndex(db);
    log(`pg_trgm index built in ${((Date.now() - t) / 1000).toFixed(1)} s`);

    // Raw post: the same documents, prepared beforehand (not timed), posted straight to Meilisearch.
    const rows = await db
      .selectFrom('orgs')
      .select(['id', 'uid', 'name', 'version_number', sql<Date>`updated`.as('updated')])
      .orderBy('id')
      .execute();
    const chunks: Buffer[] = [];
    for (let i = 0; i < rows.length; i += 20_000) {
      chunks.push(Buffer.from(JSON.stringify(rows.slice(i, i + 20_000).map(toOrgDocument))));
    }
    await ensureOrgIndex(meili, 'raw');
    t = Date.now();
    const inFlight: Promise<unknown>[] = [];
    for (const chunk of chunks) {
      inFlight.push(
        succeeded(
          meili
            .index('raw')
            .addDocumentsFromString(chunk.toString(), 'application/json', { primaryKey: 'id' }),
        ),
      );
      if (inFlight.length >= 4) await inFlight.shift();
    }
    await Promise.all(inFlight);
    const rawMs = Date.now() - t;
    log(`raw post of ${rows.length} documents: ${(rawMs / 1000).toFixed(1)} s`);
    chunks.length = 0;
    await succeeded(meili.deleteIndex('raw'));

    t = Date.now();
    const built = await reindex({ db, meili, indexUid: INDEX });
    const buildMs = Date.now() - t;
    // Every Org was committed before the rebuild started, so the outbox the inserts filled is covered.
    await sql`truncate search_outbox`.execute(db);
    log(
      `bizdir reindex of ${built.documents} Orgs: ${(buildMs / 1000).toFixed(1)} s (${(buildMs / rawMs).toFixed(2)}x raw)`,
    );
    result.build = { rawPostMs: rawMs, reindexMs: buildMs, ratio: +(buildMs / rawMs).toFixed(2) };

    // (b)'s index: the folded name as a filterable string, for Meilisearch's own CONTAINS.
    await meili.updateExperimentalFeatures({ containsFilter: true });
    await succeeded(
      meili.index('contains').updateSettings({
        filterableAttributes: ['name'],
        sortableAttributes: ['n', 'd'],
        searchableAttributes: ['d'],
        rankingRules: ['sort'],
        pagination: { maxTotalHits: 100_000_000 },
      }),
    );
    t = Date.now();
    for (let i = 0; i < rows.length; i += 20_000) {
      const docs = rows
        .slice(i, i + 20_000)
        .map((r) => ({ id: r.id, name: foldName(r.name), n: foldName(r.name), d: r.uid }));
      inFlight.push(succeeded(meili.index('contains').addDocuments(docs, { primaryKey: 'id' })));
      if (inFlight.length >= 4) await inFlight.shift();
    }
    await Promise.all(inFlight);
    log(`CONTAINS baseline index built in ${((Date.now() - t) / 1000).toFixed(1)} s`);

    // The API, as served: real app on a port, a key with plenty of credits.
    const config = loadConfig({
      DATABASE_URL: dbUrl,
      REDIS_URL: REDIS,
      QUEUE_PREFIX: prefix,
      LOG_LEVEL: 'silent',
      MEILI_URL: conn.url,
      MEILI_MASTER_KEY: conn.apiKey,
      MEILI_INDEX: INDEX,
    });
    const app = await buildApp({ config });
    cleanups.push(() => app.close());
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const account = await createAccount(db, {
      name: 'bench',
      credits: 100_000_000,
      anchorDate: new Date().toISOString().slice(0, 10),
    });
    const endpoint = async (q: string, offset: number) => {
      const url = `http://127.0.0.1:${port}/v1/org/search?sort=name&limit=20&offset=${offset}&q=${encodeURIComponent(q)}&api_key=${account.api_key}`;
      const res = await fetch(url);
      const body = (await res.json()) as { orgs?: { total: number } };
      if (res.status !== 200) throw new Error(`endpoint ${res.status} for q=${q}: ${JSON.stringify(body)}`);
      return body.orgs!.total;
    };

    const sample = rows.filter((_, i) => i % Math.floor(rows.length / 4) === 7).slice(0, 3);
    const slugs = await db
      .selectFrom('orgs')
      .select(['uid', 'public_slug'])
      .where(
        'id',
        'in',
        sample.map((r) => r.id),
      )
      .execute();
    const mix: [kind: string, q: string, offset: number][] = [
      ...['idg', 'olut', 'ngin', 'ech', 'ar', 'wid', 'ous'].map(
        (q) => ['substring', q, 0] as [string, string, number],
      ),
      ...['widgets', 'smith', 'limited', 'consulting', 'bakery', 'oxford'].map(
        (q) => ['word', q, 0] as [string, string, number],
      ),
      ...['acme widgets', 'smith & jones', 'property services', "singh's", 'solar energy'].map(
        (q) => ['phrase', q, 0] as [string, string, number],
      ),
      ...slugs.flatMap(
        (s) =>
          [
            ['domain', `${s.uid}.gb.bizdir.test`, 0],
            ['domain', `${s.public_slug}.bizdir.test`, 0],
          ] as [string, string, number][],
      ),
      ...[0, 1_000, 5_000, 9_980].map((o) => ['empty', '', o] as [string, string, number]),
    ];
    result.mix = mix;
    const contains = (q: string, offset: number) =>
      meili.index('contains').search('', {
        ...(q ? { filter: `name CONTAINS "${foldName(q).replace(/["\\]/g, (c) => `\\${c}`)}"` } : {}),
        sort: ['n:asc', 'd:asc'],
        limit: 20,
        offset,
        attributesToRetrieve: ['id'],
      });
    const searchDeps = { db, meili: createMeiliClient(conn), indexUid: INDEX, domainSuffix: 'bizdir.test' };
    const firstDomain = `${slugs[0]!.uid}.gb.bizdir.test`;
    const modes: Record<string, (q: string, offset: number) => Promise<unknown>> = {
      a_pg_ilike_trgm: (q, o) => ilikeSearch(db, q, 20, o),
      b_meili_contains: contains,
      c_bizdir_endpoint: endpoint,
      // For context: the Meilisearch part of (c) alone, and the API's fixed cost on GET /v1/org/{domain}.
      x_search_ids_only: (q, o) => searchOrgs(searchDeps, { q, sort: 'name', limit: 20, offset: o }),
      x_get_one_org_endpoint: () =>
        fetch(`http://127.0.0.1:${port}/v1/org/${firstDomain}?api_key=${account.api_key}`).then((r) =>
          r.json(),
        ),
    };
    const latencies: Record<string, Record<string, number[]>> = {};
    for (const [mode, run] of Object.entries(modes)) {
      latencies[mode] = { all: [] };
      for (const [, q, o] of mix) await run(q, o); // warm-up, not counted
      for (let r = 0; r < ROUNDS; r++) {
        for (const [kind, q, o] of mix) {
          const samples = [] as number[];
          await timed(samples, () => run(q, o));
          latencies[mode]!.all!.push(samples[0]!);
          const byKind = latencies[mode]!;
          byKind[kind] = [...(byKind[kind] ?? []), samples[0]!];
        }
      }
      log(`${mode}: ${JSON.stringify(stats(latencies[mode]!.all!))}`);
    }
    result.latencyMs = Object.fromEntries(
      Object.entries(latencies).map(([m, byKind]) => [
        m,
        Object.fromEntries(Object.entries(byKind).map(([k, s]) => [k, stats(s)])),
      ]),
    );

    // Change visible: a committed rename, announced as the importer does, found through the endpoint.
    const connection = createRedis(REDIS, 'worker');
    const deps = createWorkerDeps(config, db, connection, createLogger(config));
    const workers = startWorkers(deps, { queues: ['index'] });
    cleanups.push(async () => {
      await workers.close(5_000);
      connection.disconnect();
    });
    const visible: number[] = [];
    // Round 0 warms the worker up (first job applies the index settings) and is not counted.
    for (let i = 0; i < 6; i++) {
      const id = rows[(i + 1) * 1_000]!.id;
      const name = `BENCH CHANGE ${i} ZQX${tag.replace(/[^a-z0-9]/g, '')}`;
      await sql`update orgs set name = ${name}, version_number = version_number + 1, updated = now() where id = ${id}`.execute(
        db,
      );
      const committed = performance.now();
      await deps.orgsChanged([id]);
      while ((await endpoint(name.toLowerCase(), 0)) !== 1) await new Promise((r) => setTimeout(r, 20));
      if (i > 0) visible.push(performance.now() - committed);
    }
    result.changeVisibleMs = stats(visible);
    log(`change visible in search: ${JSON.stringify(stats(visible))}`);

    const a = result.latencyMs as Record<string, Record<string, { p99: number }>>;
    const cP99 = a.c_bizdir_endpoint!.all!.p99;
    const aP99 = a.a_pg_ilike_trgm!.all!.p99;
    result.targets = {
      endpointP99Under50ms: cP99 <= 50,
      endpointP99UnderHalfIlike: cP99 <= 0.5 * aP99,
      buildUnder1_5xRaw: buildMs <= 1.5 * rawMs,
      changeVisibleUnder5s: Math.max(...visible) <= 5_000,
    };
    const file = path.join(outDir, `search-${tag}.json`);
    writeFileSync(file, JSON.stringify(result, null, 2));
    console.log(
      JSON.stringify(
        {
          latencyMs: result.latencyMs,
          build: result.build,
          changeVisibleMs: result.changeVisibleMs,
          targets: result.targets,
        },
        null,
        2,
      ),
    );
    log(`written ${path.relative(ROOT, file)}`);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    await close();
    await meiliServer.stop();
    rmSync(meiliDir, { recursive: true, force: true });
    await dropBenchDatabase(ADMIN, dbName);
    const redis = createRedis(REDIS, 'worker');
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
}

await main();
