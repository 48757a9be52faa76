import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import type { Meilisearch, Settings } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../api/app.js';
import { indexOrgsProcessor } from '../jobs/index-orgs.processor.js';
import {
  ensureOrgIndex,
  IndexOutdatedError,
  indexState,
  ORG_INDEX_SETTINGS,
} from '../search/index-definition.js';
import { pendingChanges } from '../search/index-sync.repository.js';
import { createMeiliClient, succeeded } from '../search/meili-client.js';
import { type OrgRowForIndex, toOrgDocument } from '../search/org-document.js';
import { syncOutbox } from '../search/org-sync.js';
import { searchOrgs } from '../search/search-service.js';
import { driftCount, verifyIndex } from '../search/verify.js';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { uidOf } from '../shared/org-domains.read-model.js';
import { get, newAccount, SUFFIX } from './support/api.js';
import { runCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { meiliEnv, testIndexName, testMeiliClient, testMeiliConnection } from './support/meili.js';
import { insertOrgs, renameOrg, type TestOrg } from './support/orgs.js';
import { testQueuePrefix } from './support/redis.js';

/**
 * The upgrade rule (docs/search.md, "Index format and upgrades"): this release serves its own index
 * format only. An index of an older one is recognised; nothing is searched or written in it,
 * searches answer 503 telling the operator to run `bizdir reindex`, the worker and the API say so
 * once in their logs, `bizdir reindex --verify` says so too, and `bizdir reindex` builds this
 * format beside it and swaps it in.
 */
let db: TestDb;
let meili: Meilisearch;
let orgs: TestOrg[];

async function search(q: string, indexUid: string, freshChanges = false) {
  const page = await searchOrgs(
    {
      db: db.db,
      meili: createMeiliClient(testMeiliConnection()),
      indexUid,
      domainSuffix: SUFFIX,
      freshChanges,
    },
    { q, sort: 'name', limit: 20, offset: 0 },
  );
  return { total: page.total, ids: page.ids };
}

/** An index with the given settings holding every Org of the test database, as `toDocument` writes them. */
async function indexWith(uid: string, settings: Settings, toDocument: (row: OrgRowForIndex) => object) {
  await succeeded(meili.createIndex(uid, { primaryKey: 'id' }));
  await succeeded(meili.index(uid).updateSettings(settings));
  const rows = await db.db
    .selectFrom('orgs')
    .select(['id', uidOf('orgs').as('uid'), 'name', 'version_number', 'updated'])
    .execute();
  await succeeded(
    meili.index(uid).addDocuments(rows.map((r) => toDocument({ ...r, updated: new Date(r.updated) }))),
  );
}

/** Format 6, the one before this release's: the same documents without the first-character keys. */
const FORMAT_6_SETTINGS: Settings = {
  ...ORG_INDEX_SETTINGS,
  sortableAttributes: ['n', 'd', 'np', 'u', 'db'],
};
function format6Document(row: OrgRowForIndex): object {
  const { n1: _n1, d1: _d1, ua: _ua, ud: _ud, ...rest } = toOrgDocument(row);
  return rest;
}

/** The log lines a logger writes to it, parsed. */
function logSink() {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { lines, stream, warnings: () => lines.filter((l) => l.level === 40).map((l) => l.msg) };
}

beforeAll(async () => {
  db = await createTestDb();
  meili = testMeiliClient();
  orgs = await insertOrgs(db.db, [
    { name: 'ACME WIDGETS LTD' },
    { name: 'BRIDGET JONES LTD' },
    { name: 'ZEBRA CO' },
  ]);
  await db.db.deleteFrom('search_outbox').execute();
});

afterAll(async () => {
  await db?.drop();
});

describe('an index of the format before this one', () => {
  let oldUid: string;
  const redisNs = testQueuePrefix();

  beforeAll(async () => {
    oldUid = testIndexName('upgrade-v6');
    await indexWith(oldUid, FORMAT_6_SETTINGS, format6Document);
  });

  afterAll(async () => {
    await meili?.deleteIndexIfExists(oldUid);
    await redisNs.cleanup();
  });

  it('is recognised and left as it is at start-up; a search or a verify says to run `bizdir reindex`', async () => {
    expect(await indexState(meili, oldUid)).toBe('older');
    expect(await ensureOrgIndex(meili, oldUid)).toBe('older');
    expect((await meili.index(oldUid).getSortableAttributes()).sort()).toEqual(
      [...(FORMAT_6_SETTINGS.sortableAttributes ?? [])].sort(),
    );
    const refused = search('acme', oldUid);
    await expect(refused).rejects.toBeInstanceOf(IndexOutdatedError);
    await expect(refused).rejects.toThrow(/run `bizdir reindex`/);
    await expect(verifyIndex(db.db, meili, oldUid)).rejects.toBeInstanceOf(IndexOutdatedError);
  });

  it('gets no writes: a change waits in the outbox, and the worker says once why', async () => {
    await renameOrg(db.db, orgs[2]!.id, 'ZEBRA WIDGETS CO');
    const before = await meili.index(oldUid).getDocument(orgs[2]!.id);
    expect(await syncOutbox({ db: db.db, meili, indexUid: oldUid })).toMatchObject({
      ran: true,
      olderIndex: true,
      batches: 0,
    });
    expect(await pendingChanges(db.db)).toBe(1);
    expect(await meili.index(oldUid).getDocument(orgs[2]!.id)).toEqual(before);

    const log = logSink();
    const config = loadConfig({
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: redisNs.prefix,
      LOG_LEVEL: 'info',
      ...meiliEnv(oldUid),
    });
    const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    try {
      const run = indexOrgsProcessor({
        db: db.db,
        logger: createLogger(config, {}, log.stream),
        config,
        connection,
        orgsChanged: async () => undefined,
      });
      const job = { data: { reason: 'sweep' }, updateProgress: async () => undefined };
      for (let i = 0; i < 3; i++)
        await run(job as unknown as Parameters<typeof run>[0], undefined, undefined);
    } finally {
      await connection.quit();
    }
    const said = log.warnings().filter((m) => m.includes('run `bizdir reindex`'));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(oldUid);
    expect(await pendingChanges(db.db)).toBe(1);
  });

  it('the API answers 503 in its error shape, telling the operator to run `bizdir reindex`, and logs it once', async () => {
    const log = logSink();
    const config = loadConfig({
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: redisNs.prefix,
      DOMAIN_SUFFIX: SUFFIX,
      LOG_LEVEL: 'info',
      ...meiliEnv(oldUid),
    });
    const app = await buildApp({ config, logger: createLogger(config, {}, log.stream) });
    try {
      await app.ready();
      const { api_key } = await newAccount(db.db);
      for (const q of ['acme', 'jones']) {
        const res = await get(app, `/v1/org/search?q=${q}`, api_key);
        expect(res.status).toBe(503);
        expect(res.body).toEqual({
          code: 503,
          message: expect.stringMatching(/^Service Unavailable: .*run `bizdir reindex`/),
        });
        expect(JSON.stringify(res.body)).not.toMatch(/meili/i);
      }
      // Start-up found it first (onReady, not awaited): one line, whichever of them said it.
      expect(log.warnings().filter((m) => m.includes('run `bizdir reindex`'))).toHaveLength(1);
    } finally {
      await app.close();
    }
  });

  it('`bizdir reindex` builds this format beside it and swaps it in: the next search answers, the waiting change follows', async () => {
    const env = { DATABASE_URL: db.url, ...meiliEnv(oldUid) };
    const verify = await runCli(['reindex', '--verify'], env);
    expect(verify.code).toBe(1);
    expect(verify.stderr).toContain(`search index ${oldUid} is of an older format`);
    expect(verify.stderr).toContain('run `bizdir reindex`');
    const rebuilt = await runCli(['reindex', '--wait'], env);
    expect(rebuilt.code).toBe(0);
    expect(rebuilt.stdout).toContain(`${oldUid} is of an older format: the new index replaces it`);
    expect(rebuilt.stdout).toMatch(/search index rebuilt: 3 Orgs/);
    expect(await indexState(meili, oldUid)).toBe('current');
    const after = await meili.index(oldUid).getDocument(orgs[0]!.id);
    for (const key of ['n1', 'd1', 'ua', 'ud']) expect(after).toHaveProperty(key);
    // The first search after the swap, in the process that was told "older" just before.
    expect(await search('jones', oldUid)).toEqual({ total: 1, ids: [orgs[1]!.id] });
    // The rename made while the old index was live: in the new index already (the build read the
    // row), and its outbox row is synced into it like any other.
    expect((await search('idget', oldUid)).total).toBe(3);
    await syncOutbox({ db: db.db, meili, indexUid: oldUid });
    expect(await pendingChanges(db.db)).toBe(0);
    expect(driftCount(await verifyIndex(db.db, meili, oldUid))).toBe(0);
    // Two `bizdir` processes, each starting Node and tsx: slow on a busy machine, not a hang.
  }, 120_000);
});

describe('the first index format (every name suffix as a filter value)', () => {
  it('is recognised as older by the same rule: it lacks the sort keys this release uses', async () => {
    const uid = testIndexName('upgrade-v1');
    try {
      await succeeded(meili.createIndex(uid, { primaryKey: 'id' }));
      await succeeded(
        meili.index(uid).updateSettings({ searchableAttributes: ['d'], sortableAttributes: ['n', 'u', 'd'] }),
      );
      expect(await indexState(meili, uid)).toBe('older');
      expect(await ensureOrgIndex(meili, uid)).toBe('older');
      await expect(search('acme', uid)).rejects.toBeInstanceOf(IndexOutdatedError);
    } finally {
      await meili.deleteIndexIfExists(uid);
    }
  });
});

describe('the language of the words', () => {
  it('a new index is created with the words declared English', async () => {
    const uid = testIndexName('locale-new');
    try {
      await ensureOrgIndex(meili, uid);
      expect(await meili.index(uid).getLocalizedAttributes()).toEqual([
        { attributePatterns: ['g'], locales: ['eng'] },
      ]);
    } finally {
      await meili.deleteIndexIfExists(uid);
    }
  });

  it('start-up never changes the language an existing index was built with (no re-tokenizing task)', async () => {
    const uid = testIndexName('locale-kept');
    try {
      const { localizedAttributes: _none, ...without } = ORG_INDEX_SETTINGS;
      await indexWith(uid, without, toOrgDocument);
      const tasksBefore = (await meili.tasks.getTasks({ indexUids: [uid], limit: 1 })).results[0]!.uid;
      expect(await ensureOrgIndex(meili, uid)).toBe('current');
      expect(await meili.index(uid).getLocalizedAttributes()).toBeNull();
      const [task] = (await meili.tasks.getTasks({ indexUids: [uid], limit: 1 })).results;
      expect(task!.uid).toBeGreaterThan(tasksBefore);
      expect(task!.details).not.toHaveProperty('localizedAttributes');
      expect((await search('acme w', uid)).total).toBe(1);
    } finally {
      await meili.deleteIndexIfExists(uid);
    }
  });
});

describe('an index a later release built', () => {
  it('is left as it is at start-up: its extra sort keys stay, and it answers with this release rules', async () => {
    const uid = testIndexName('later-format');
    try {
      const later = {
        ...ORG_INDEX_SETTINGS,
        sortableAttributes: [...(ORG_INDEX_SETTINGS.sortableAttributes ?? []), 'zz'],
      };
      await indexWith(uid, later, (row) => ({ ...toOrgDocument(row), zz: 'z' }));
      expect(await ensureOrgIndex(meili, uid)).toBe('current');
      expect(await meili.index(uid).getSortableAttributes()).toContain('zz');
      expect((await search('acme', uid)).ids).toEqual([orgs[0]!.id]);
    } finally {
      await meili.deleteIndexIfExists(uid);
    }
  });
});
