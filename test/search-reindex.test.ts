import { sql } from 'kysely';
import type { Meilisearch } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pendingChanges } from '../search/index-sync.repository.js';
import {
  createMeiliClient,
  indexExists,
  MeiliTaskFailedError,
  SearchUnavailableError,
  streamDocuments,
} from '../search/meili-client.js';
import { syncOutbox } from '../search/org-sync.js';
import { RebuildStopped } from '../search/rebuild-stop.js';
import { reindex } from '../search/reindex.js';
import { driftCount, verifyIndex } from '../search/verify.js';
import { runCli, spawnCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { meiliEnv, testIndexName, testMeiliClient } from './support/meili.js';
import { buildTestIndex, searchIndexOnly } from './support/search-index.js';
import { until } from './support/wait.js';

const SUFFIX = 'bizdir.test';
const COUNT = 3_000;

let t: TestDb;
let meili: Meilisearch;
const indexUid = testIndexName('reindex');

beforeAll(async () => {
  t = await createTestDb();
  meili = testMeiliClient();
  // Real rows in the real schema, in one statement (the trigger queues them for the index).
  await sql`
    insert into orgs (domain_cc, public_slug, name, content_hash)
    select 'gb', 'reindex-org-' || g, 'ORG ' || g || ' WIDGETS LTD', 'h' || g
    from generate_series(1, ${COUNT}) g`.execute(t.db);
  await buildTestIndex(t.db, meili, indexUid);
});

afterAll(async () => {
  await meili?.deleteIndexIfExists(indexUid);
  await t?.drop();
});

const find = (q: string) => searchIndexOnly(t.db, indexUid, q, { limit: 10, domainSuffix: SUFFIX });

describe('bizdir reindex', () => {
  it('serves every query during a rebuild and keeps changes committed while it runs', async () => {
    let running = true;
    const outcomes = { ok: 0, empty: 0, failed: 0 };
    // Readers: a term matching every Org, one matching a single Org.
    const readers = ['widgets', 'org 1234 '].map(async (q) => {
      while (running) {
        try {
          const page = await find(q);
          if (page.total === 0) outcomes.empty++;
          else outcomes.ok++;
        } catch {
          outcomes.failed++;
        }
      }
    });
    // The indexer keeps working during the rebuild, as a worker would.
    const indexer = (async () => {
      while (running) {
        await syncOutbox({ db: t.db, meili, indexUid });
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    let change: Promise<unknown> | undefined;
    const result = await reindex(
      { db: t.db, meili, indexUid },
      {
        chunk: 500,
        onProgress: () => {
          // Commit a rename and a new Org while the bulk load is under way.
          change ??= Promise.all([
            sql`update orgs set name = 'RENAMED DURING REBUILD LTD', version_number = version_number + 1,
                updated = now() where public_slug = 'reindex-org-7'`.execute(t.db),
            sql`insert into orgs (domain_cc, public_slug, name, content_hash)
                values ('gb', 'reindex-new', 'BORN DURING REBUILD LTD', 'new')`.execute(t.db),
          ]);
        },
      },
    );
    await change;
    running = false;
    await Promise.all([...readers, indexer]);
    await syncOutbox({ db: t.db, meili, indexUid });

    expect(result.documents).toBeGreaterThanOrEqual(COUNT);
    expect(outcomes.failed).toBe(0);
    expect(outcomes.empty).toBe(0);
    expect(outcomes.ok).toBeGreaterThan(0);
    expect(await pendingChanges(t.db)).toBe(0);
    expect((await find('renamed during')).total).toBe(1);
    expect((await find('born during')).total).toBe(1);
    expect((await find('org 7 widgets')).total).toBe(0);
    expect(driftCount(await verifyIndex(t.db, meili, indexUid))).toBe(0);
    // The retired index is gone; only the live one remains under this test's name.
    const names = (await meili.getRawIndexes({ limit: 1000 })).results.map((i) => i.uid);
    expect(names.filter((n) => n.startsWith(indexUid))).toEqual([indexUid]);
  });

  it('a rebuild stopped mid-load (its signal aborted) cancels its tasks, drops its index and leaves the live one', async () => {
    const live = await meili.getRawIndex(indexUid);
    const documents = (await meili.index(indexUid).getStats()).numberOfDocuments;
    const stop = new AbortController();
    let target = '';
    const stopped = reindex(
      { db: t.db, meili, indexUid, log: (line) => (target ||= /building (\S+)/.exec(line)?.[1] ?? '') },
      { chunk: 300, onProgress: () => stop.abort(), signal: stop.signal },
    );
    await expect(stopped).rejects.toBeInstanceOf(RebuildStopped);
    expect(target).toMatch(/__build_/);
    expect(await t.db.selectFrom('search_reindex').select('target').execute()).toEqual([]);
    // The dropped build's index is deleted (a task of its own, after its canceled ones).
    await until(async () => !(await indexExists(meili, target)), {
      timeoutMs: 30_000,
      what: `${target} deleted`,
    });
    const names = (await meili.getRawIndexes({ limit: 1000 })).results.map((i) => i.uid);
    expect(names.filter((n) => n.startsWith(indexUid))).toEqual([indexUid]);
    expect((await meili.getRawIndex(indexUid)).createdAt).toBe(live.createdAt);
    expect((await meili.index(indexUid).getStats()).numberOfDocuments).toBe(documents);
    expect(driftCount(await verifyIndex(t.db, meili, indexUid))).toBe(0);
  });

  it('streams each task of a bulk load from pages: tasks of `chunk` Orgs, the last one partial', async () => {
    const { n } = await t.db
      .selectFrom('orgs')
      .select(sql<number>`count(*)::int`.as('n'))
      .executeTakeFirstOrThrow();
    const result = await reindex({ db: t.db, meili, indexUid }, { chunk: 700, page: 160 });
    expect(result.documents).toBe(n);
    const tasks = await meili.tasks.getTasks({
      indexUids: [result.target],
      types: ['documentAdditionOrUpdate'],
      limit: 100,
    });
    const received = tasks.results
      .map((task) => ({ status: task.status, docs: task.details?.receivedDocuments }))
      .reverse();
    const whole = Math.floor(n / 700);
    expect(received).toEqual([
      ...Array.from({ length: whole }, () => ({ status: 'succeeded', docs: 700 })),
      ...(n % 700 > 0 ? [{ status: 'succeeded', docs: n % 700 }] : []),
    ]);
    expect(driftCount(await verifyIndex(t.db, meili, indexUid))).toBe(0);
    expect((await find('org 12 widgets')).total).toBe(1);
  });

  it('a streamed payload: a failure while producing it is thrown as itself, bad input and no Meilisearch as ours', async () => {
    const uid = testIndexName('stream');
    async function* failing() {
      yield '{"id":1,"g":"abc"}\n';
      throw new Error('postgres went away');
    }
    await expect(streamDocuments(meili, uid, failing())).rejects.toMatchObject({
      name: 'Error',
      message: 'postgres went away',
    });
    async function* malformed() {
      yield '{"id": 1,\n';
    }
    await expect(streamDocuments(meili, uid, malformed())).rejects.toBeInstanceOf(MeiliTaskFailedError);
    async function* one() {
      yield '{"id":1,"g":"abc"}\n';
    }
    const away = createMeiliClient({ url: 'http://127.0.0.1:9', apiKey: 'k' });
    await expect(streamDocuments(away, uid, one())).rejects.toBeInstanceOf(SearchUnavailableError);
    await meili.deleteIndexIfExists(uid);
  });

  it('--wait rebuilds from the command line; --verify reports a deleted entry and exits non-zero', async () => {
    const env = { DATABASE_URL: t.url, ...meiliEnv(indexUid) };
    const rebuilt = await runCli(['reindex', '--wait'], env);
    expect(rebuilt.stderr).toBe('');
    expect(rebuilt.code).toBe(0);
    expect(rebuilt.stdout).toMatch(/search index rebuilt: \d+ Orgs/);

    const clean = await runCli(['reindex', '--verify'], env);
    expect(clean.code).toBe(0);
    expect(clean.stdout).toMatch(/missing: 0/);

    const victim = await t.db
      .selectFrom('orgs')
      .select('id')
      .where('public_slug', '=', 'reindex-org-42')
      .executeTakeFirstOrThrow();
    const task = await meili.index(indexUid).deleteDocument(victim.id).waitTask();
    expect(task.status).toBe('succeeded');
    const drift = await runCli(['reindex', '--verify'], env);
    expect(drift.code).toBe(1);
    expect(drift.stdout).toContain(`missing: 1 (org ids ${victim.id})`);
    expect(drift.stderr).toMatch(/search index drift: 1/);
    // Three `bizdir` processes, each starting Node and tsx: slow on a busy machine, not a hang.
  }, 120_000);

  it('--wait interrupted (SIGINT) drops its build, says so and exits non-zero; the live index stays', async () => {
    const env = { DATABASE_URL: t.url, ...meiliEnv(indexUid) };
    const live = await meili.getRawIndex(indexUid);
    const child = spawnCli(['reindex', '--wait'], env);
    let stdout = '';
    let stderr = '';
    child.stderr?.on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // Interrupted once the build is registered (its first line), while its Orgs load.
    await new Promise<void>((resolve) =>
      child.stdout?.on('data', (d) => {
        stdout += d;
        if (/building \S+/.test(stdout)) resolve();
      }),
    );
    child.kill('SIGINT');
    expect(await exited).toBe(1);
    expect(stderr).toMatch(/search index rebuild stopped before the swap: the live index is unchanged/);
    expect(stdout).not.toMatch(/search index rebuilt/);
    const target = /building (\S+)/.exec(stdout)![1]!;
    await until(async () => !(await indexExists(meili, target)), {
      timeoutMs: 30_000,
      what: `${target} deleted`,
    });
    expect(await t.db.selectFrom('search_reindex').select('target').execute()).toEqual([]);
    expect((await meili.getRawIndex(indexUid)).createdAt).toBe(live.createdAt);
  }, 120_000);
});
