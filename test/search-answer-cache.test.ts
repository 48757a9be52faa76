import type { FastifyInstance } from 'fastify';
import type { Meilisearch } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncOutbox } from '../search/org-sync.js';
import { parseServerTiming } from '../search/search-timing.js';
import { get, newAccount, startTestApi } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { testIndexName, testMeiliClient } from './support/meili.js';
import { insertOrgs, type TestOrg } from './support/orgs.js';
import { testQueuePrefix } from './support/redis.js';
import { buildTestIndex } from './support/search-index.js';

/**
 * SEARCH_ANSWER_CACHE=on: a repeated search is answered without the index, and never with an answer
 * older than the records: a committed change is in the very next answer, before and after the
 * index has applied it.
 */
let t: TestDb;
let app: FastifyInstance;
let meili: Meilisearch;
let key: string;
let orgs: TestOrg[];
const queue = testQueuePrefix();
const indexUid = testIndexName('answer_cache');

type Page = { orgs: { total: number; results: { name: string }[] } };
const search = async (q: string) => {
  const res = await get(app, `/v1/org/search?q=${q}`, key);
  expect(res.status).toBe(200);
  const body = res.body as Page;
  return {
    total: body.orgs.total,
    names: body.orgs.results.map((o) => o.name),
    timing: parseServerTiming(String(res.headers['server-timing'])),
  };
};

beforeAll(async () => {
  t = await createTestDb();
  meili = testMeiliClient();
  orgs = await insertOrgs(t.db, [{ name: 'ACME WIDGETS LTD' }, { name: 'BRIDGET JONES LTD' }]);
  await buildTestIndex(t.db, meili, indexUid);
  app = await startTestApi({
    databaseUrl: t.url,
    prefix: queue.prefix,
    meiliIndex: indexUid,
    env: { SEARCH_ANSWER_CACHE: 'on' },
  });
  key = (await newAccount(t.db)).api_key;
});

afterAll(async () => {
  await app?.close();
  await queue.cleanup();
  await meili?.deleteIndexIfExists(indexUid);
  await t?.drop();
});

describe('the search answer cache', () => {
  it('answers a repeated search without the index, and a change to the records at once', async () => {
    const first = await search('idget');
    expect(first).toMatchObject({ total: 2, names: ['ACME WIDGETS LTD', 'BRIDGET JONES LTD'] });
    expect(first.timing.search).toBeGreaterThan(0);
    const again = await search('idget');
    expect(again).toMatchObject({ total: 2, names: first.names });
    // Kept: no index call and no database read for the answer.
    expect(again.timing.search).toBe(0);

    // A rename, committed and not yet indexed: the next answer already has it.
    await t.db.updateTable('orgs').set({ name: 'ACME GADGETS LTD' }).where('id', '=', orgs[0]!.id).execute();
    expect(await search('idget')).toMatchObject({ total: 1, names: ['BRIDGET JONES LTD'] });
    expect(await search('idget')).toMatchObject({ total: 1, names: ['BRIDGET JONES LTD'] });
    // Applied to the index: the same answer.
    await syncOutbox({ db: t.db, meili, indexUid });
    expect(await search('idget')).toMatchObject({ total: 1, names: ['BRIDGET JONES LTD'] });
    expect(await search('gadget')).toMatchObject({ total: 1, names: ['ACME GADGETS LTD'] });
  });
});
