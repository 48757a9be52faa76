import { sql } from 'kysely';
import type { Meilisearch } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkerDeps, startWorkers } from '../jobs/worker.js';
import { planCatchUp, STALLED_MS } from '../search/catch-up.js';
import { ensureOrgIndex } from '../search/index-definition.js';
import { pendingChanges } from '../search/index-sync.repository.js';
import { createMeiliClient } from '../search/meili-client.js';
import { syncOutbox } from '../search/org-sync.js';
import { rebuildForBacklog } from '../search/reindex.js';
import { driftCount, verifyIndex } from '../search/verify.js';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { createRedis } from '../shared/redis.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { meiliEnv, testIndexName, testMeiliClient, testMeiliConnection } from './support/meili.js';
import { testQueuePrefix } from './support/redis.js';
import { buildTestIndex, searchIndexOnly } from './support/search-index.js';
import { sleep, until } from './support/wait.js';

const SUFFIX = 'bizdir.test';

/** Inserts Orgs `from..to` in one statement (the outbox trigger queues them as one row). */
async function addOrgs(db: TestDb['db'], from: number, to: number, word = 'GADGETS'): Promise<void> {
  await sql`
    insert into orgs (domain_cc, public_slug, name, content_hash)
    select 'gb', 'catchup-' || g, 'CATCHUP ' || g || ' ${sql.raw(word)} LTD', 'h' || g
    from generate_series(${from}::int, ${to}::int) g`.execute(db);
}

async function indexesNamed(meili: Meilisearch, prefix: string): Promise<string[]> {
  const { results } = await meili.getIndexes({ limit: 1000 });
  return results.map((i) => i.uid).filter((uid) => uid.startsWith(prefix));
}

describe('a far-behind index is rebuilt, not synced batch by batch', () => {
  let t: TestDb;
  let meili: Meilisearch;
  const indexUid = testIndexName('catchup');

  beforeAll(async () => {
    t = await createTestDb();
    meili = testMeiliClient();
    await addOrgs(t.db, 1, 200);
    await buildTestIndex(t.db, meili, indexUid);
  });

  afterAll(async () => {
    for (const uid of await indexesNamed(meili, indexUid)) await meili.deleteIndexIfExists(uid);
    await t?.drop();
  });

  const find = (q: string) => searchIndexOnly(t.db, indexUid, q, { limit: 10, domainSuffix: SUFFIX });

  it('plans: sync below the threshold or below 30 % of the index, wait while an import writes, rebuild after', async () => {
    await addOrgs(t.db, 201, 250);
    // 50 behind, threshold 100: sync.
    expect(await planCatchUp(t.db, meili, indexUid, 100)).toMatchObject({
      action: 'sync',
      pending: 50,
    });
    // 50 behind of an index of 200 (25 %): sync, even with a threshold of 10.
    expect(await planCatchUp(t.db, meili, indexUid, 10)).toMatchObject({
      action: 'sync',
      documents: 200,
    });
    await addOrgs(t.db, 251, 700);
    // 500 behind, 250 % of the index: rebuild, unless turned off.
    expect((await planCatchUp(t.db, meili, indexUid, 100)).action).toBe('rebuild');
    expect((await planCatchUp(t.db, meili, indexUid, 0)).action).toBe('sync');
    // An import running and writing: wait for it.
    const run = await t.db
      .insertInto('import_runs')
      .values({ feed: 'registrar', source: '/tmp/x.csv', status: 'running' })
      .returning('id')
      .executeTakeFirstOrThrow();
    expect(await planCatchUp(t.db, meili, indexUid, 100)).toMatchObject({
      action: 'wait',
      importsRunning: 1,
    });
    // A run that has not written for STALLED_MS is not waited for.
    await sql`update search_outbox set created_at = now() - make_interval(secs => ${STALLED_MS / 1000 + 60})`.execute(
      t.db,
    );
    expect((await planCatchUp(t.db, meili, indexUid, 100)).action).toBe('rebuild');
    await t.db.updateTable('import_runs').set({ status: 'succeeded' }).where('id', '=', run.id).execute();
  });

  it('rebuilds and swaps; what was behind is searchable and gone from the outbox, changes made meanwhile stay queued', async () => {
    expect(await pendingChanges(t.db)).toBe(500);
    const before = (await meili.getRawIndex(indexUid)).createdAt;
    let during: Promise<unknown> | undefined;
    const result = await rebuildForBacklog(
      { db: t.db, meili, indexUid },
      {
        chunk: 100,
        onProgress: () => {
          // Committed while the bulk load runs: a rename of an Org already loaded, and a new Org.
          during ??= Promise.all([
            sql`update orgs set name = 'RENAMED WHILE REBUILDING LTD', version_number = version_number + 1,
                updated = now() where public_slug = 'catchup-1'`.execute(t.db),
            addOrgs(t.db, 701, 701, 'LATECOMER'),
          ]);
        },
      },
    );
    await during;
    expect(result).toMatchObject({ ran: true, covered: 500 });
    expect(result.documents).toBeGreaterThanOrEqual(700);
    // Swapped: the live name now holds the new index, and no build is left behind.
    expect((await meili.getRawIndex(indexUid)).createdAt).not.toBe(before);
    expect(await indexesNamed(meili, `${indexUid}__`)).toEqual([]);
    expect(await t.db.selectFrom('search_reindex').selectAll().execute()).toEqual([]);
    // The backlog was covered by the build; the two changes made during it are still queued.
    expect(await pendingChanges(t.db)).toBe(2);
    expect((await find('gadgets')).total).toBeGreaterThanOrEqual(699);
    expect((await find('catchup 650 ')).total).toBe(1);
    // After the sync of the rest, the index equals Postgres.
    await syncOutbox({ db: t.db, meili, indexUid });
    expect(await pendingChanges(t.db)).toBe(0);
    expect((await find('renamed while')).total).toBe(1);
    expect((await find('latecomer')).total).toBe(1);
    expect((await find('gadgets')).total).toBe(699);
    expect(driftCount(await verifyIndex(t.db, meili, indexUid))).toBe(0);
  });

  it('a sync run stops where keepGoing says the backlog is better rebuilt, finishing what is in flight', async () => {
    await addOrgs(t.db, 902, 910);
    await addOrgs(t.db, 911, 920);
    await addOrgs(t.db, 921, 930);
    let asked = 0;
    const result = await syncOutbox(
      { db: t.db, meili, indexUid },
      { batchIds: 1, keepGoingEveryMs: 0, keepGoing: async () => ++asked < 2 },
    );
    expect(asked).toBe(2);
    expect(result.batches).toBe(1);
    expect(await pendingChanges(t.db)).toBe(20);
    await syncOutbox({ db: t.db, meili, indexUid });
    expect(await pendingChanges(t.db)).toBe(0);
  });

  it('follows a running import: changes committed during the build go into it, and their outbox rows go with the swap', async () => {
    await syncOutbox({ db: t.db, meili, indexUid });
    await addOrgs(t.db, 1001, 1400);
    const before = (await meili.getRawIndex(indexUid)).createdAt;
    let asked = 0;
    const result = await rebuildForBacklog(
      { db: t.db, meili, indexUid },
      {
        chunk: 100,
        follow: async () => {
          asked++;
          if (asked === 1) {
            // The import goes on: new Orgs, a rename of an Org the bulk load read, a removal.
            await addOrgs(t.db, 1401, 1500, 'FOLLOWED');
            await sql`update orgs set name = 'RENAMED WHILE FOLLOWING LTD', version_number = version_number + 1,
                updated = now() where public_slug = 'catchup-1001'`.execute(t.db);
            await t.db.deleteFrom('orgs').where('public_slug', '=', 'catchup-1002').execute();
            return true;
          }
          // The import's last commit lands just before it is seen to have ended.
          if (asked === 2) await addOrgs(t.db, 1501, 1510, 'LASTBATCH');
          return false;
        },
      },
    );
    // 400 noted at the start; 100 + 1 + 1 then 10 followed.
    expect(result).toMatchObject({ ran: true, followed: 112, covered: 512 });
    expect(asked).toBe(3);
    expect((await meili.getRawIndex(indexUid)).createdAt).not.toBe(before);
    expect(await indexesNamed(meili, `${indexUid}__`)).toEqual([]);
    expect(await pendingChanges(t.db)).toBe(0);
    expect((await find('followed')).total).toBe(100);
    expect((await find('lastbatch')).total).toBe(10);
    expect((await find('renamed while following')).total).toBe(1);
    expect((await find('catchup 1001 ')).total).toBe(0);
    expect((await find('catchup 1002 ')).total).toBe(0);
    expect(driftCount(await verifyIndex(t.db, meili, indexUid))).toBe(0);
  });

  it('leaves the outbox and the live index as they were when the build fails', async () => {
    const indexed = (await find('gadgets')).total;
    await addOrgs(t.db, 702, 900);
    // A Meilisearch that refuses everything: the build fails, the live index and the outbox stay.
    const broken = createMeiliClient({ url: testMeiliConnection().url, apiKey: 'not-the-key' });
    await expect(rebuildForBacklog({ db: t.db, meili: broken, indexUid })).rejects.toThrow();
    expect(await pendingChanges(t.db)).toBe(199);
    expect(await t.db.selectFrom('search_reindex').selectAll().execute()).toEqual([]);
    expect((await find('gadgets')).total).toBe(indexed);
    await syncOutbox({ db: t.db, meili, indexUid });
    expect((await find('gadgets')).total).toBe(indexed + 199);
  });
});

/**
 * A test database with 100 Orgs synced into `indexUid`, and a worker running the index queue with
 * a backlog threshold of 200 and SEARCH_REBUILD_DURING_IMPORT as given (for the enclosing describe).
 */
function withIndexWorker(name: string, duringImport: 'on' | 'off') {
  const ctx = { indexUid: testIndexName(name) } as { t: TestDb; meili: Meilisearch; indexUid: string };
  const queue = testQueuePrefix();
  let stop: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ctx.t = await createTestDb();
    ctx.meili = testMeiliClient();
    await addOrgs(ctx.t.db, 1, 100);
    await ensureOrgIndex(ctx.meili, ctx.indexUid);
    await syncOutbox({ db: ctx.t.db, meili: ctx.meili, indexUid: ctx.indexUid });
    const config = loadConfig({
      DATABASE_URL: ctx.t.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: queue.prefix,
      LOG_LEVEL: 'silent',
      SEARCH_REBUILD_BACKLOG: '200',
      SEARCH_REBUILD_DURING_IMPORT: duringImport,
      ...meiliEnv(ctx.indexUid),
    });
    const connection = createRedis(TEST_REDIS_URL, 'worker');
    const workers = startWorkers(createWorkerDeps(config, ctx.t.db, connection, createLogger(config)), {
      queues: ['index'],
    });
    stop = async () => {
      await workers.close(5_000);
      connection.disconnect();
    };
  });

  afterAll(async () => {
    await stop?.();
    await queue.cleanup();
    for (const uid of await indexesNamed(ctx.meili, ctx.indexUid)) await ctx.meili.deleteIndexIfExists(uid);
    await ctx.t?.drop();
  });
  return ctx;
}

describe('the index worker waits for a bulk import, then rebuilds (SEARCH_REBUILD_DURING_IMPORT=off)', () => {
  const w = withIndexWorker('catchupw', 'off');

  it('a small change is synced as usual; a bulk one waits while its import runs and is rebuilt once it ends', async () => {
    const { t, meili, indexUid } = w;
    const created = (await meili.getRawIndex(indexUid)).createdAt;
    await addOrgs(t.db, 101, 150);
    await until(async () => (await pendingChanges(t.db)) === 0, {
      timeoutMs: 30_000,
      what: 'an empty outbox',
    });
    expect((await meili.getRawIndex(indexUid)).createdAt).toBe(created);

    const run = await t.db
      .insertInto('import_runs')
      .values({ feed: 'registrar', source: '/tmp/x.csv', status: 'running' })
      .returning('id')
      .executeTakeFirstOrThrow();
    // A sync that planned before the run existed (the sweep runs every second) could still take the
    // next rows as a normal batch: let any such run end before the bulk change lands. Seen on a
    // loaded machine (the full suite at twice its usual time): all 850 synced, 0 pending.
    await sleep(1_500);
    await addOrgs(t.db, 151, 1000);
    // Several sweeps (one a second) pass: nothing is posted while the import runs.
    await sleep(2_500);
    expect(await pendingChanges(t.db)).toBe(850);
    expect((await meili.index(indexUid).getStats()).numberOfDocuments).toBe(150);
    await t.db.updateTable('import_runs').set({ status: 'succeeded' }).where('id', '=', run.id).execute();
    await until(async () => (await pendingChanges(t.db)) === 0, {
      timeoutMs: 30_000,
      what: 'an empty outbox',
    });
    expect((await meili.getRawIndex(indexUid)).createdAt).not.toBe(created);
    expect((await meili.index(indexUid).getStats()).numberOfDocuments).toBe(1000);
    expect(driftCount(await verifyIndex(t.db, meili, indexUid))).toBe(0);
  });
});

describe('the index worker rebuilds during a bulk import, following it (SEARCH_REBUILD_DURING_IMPORT=on)', () => {
  const w = withIndexWorker('catchupf', 'on');

  it('a small change is synced as usual; a bulk one is rebuilt while its import runs, the new index following it, and swapped in when it ends', async () => {
    const { t, meili, indexUid } = w;
    const created = (await meili.getRawIndex(indexUid)).createdAt;
    await addOrgs(t.db, 101, 150);
    await until(async () => (await pendingChanges(t.db)) === 0, {
      timeoutMs: 30_000,
      what: 'an empty outbox',
    });
    expect((await meili.getRawIndex(indexUid)).createdAt).toBe(created);

    const run = await t.db
      .insertInto('import_runs')
      .values({ feed: 'registrar', source: '/tmp/x.csv', status: 'running' })
      .returning('id')
      .executeTakeFirstOrThrow();
    await addOrgs(t.db, 151, 1000);
    // The build starts while the import runs; the live index and the outbox stay as they are.
    const building = async () =>
      (await t.db.selectFrom('search_reindex').select('target').execute()).map((r) => r.target);
    await until(async () => (await building()).length === 1, {
      timeoutMs: 30_000,
      what: 'the build to start',
    });
    const [target] = await building();
    expect(target).toContain('__catchup_');
    // More commits of the same import, and a rename of an Org already in the index: followed.
    await addOrgs(t.db, 1001, 1100, 'FOLLOWED');
    await sql`update orgs set name = 'RENAMED DURING THE IMPORT LTD', version_number = version_number + 1,
        updated = now() where public_slug = 'catchup-120'`.execute(t.db);
    await until(
      async () => {
        // Registered before Meilisearch creates it: not found for a moment.
        const stats = await meili
          .index(target!)
          .getStats()
          .catch(() => undefined);
        return stats?.numberOfDocuments === 1100 && !stats.isIndexing;
      },
      { timeoutMs: 30_000, what: 'the build to follow the import' },
    );
    expect(await pendingChanges(t.db)).toBe(951);
    expect((await meili.index(indexUid).getStats()).numberOfDocuments).toBe(150);
    await t.db.updateTable('import_runs').set({ status: 'succeeded' }).where('id', '=', run.id).execute();
    // The build is unregistered after the swap, and the retired index deleted after that.
    await until(
      async () =>
        (await pendingChanges(t.db)) === 0 &&
        (await building()).length === 0 &&
        (await indexesNamed(meili, `${indexUid}__`)).length === 0,
      { timeoutMs: 30_000, what: 'the swap and the retired index deleted' },
    );
    expect((await meili.getRawIndex(indexUid)).createdAt).not.toBe(created);
    expect((await meili.index(indexUid).getStats()).numberOfDocuments).toBe(1100);
    expect(driftCount(await verifyIndex(t.db, meili, indexUid))).toBe(0);
  });
});
