import type { Meilisearch } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { V1_INDEX_SETTINGS } from '../search/legacy-v1/index-settings.js';
import { toV1OrgDocument } from '../search/legacy-v1/org-document.js';
import { createMeiliClient, indexFormat, succeeded } from '../search/meili-client.js';
import { syncOutbox } from '../search/org-sync.js';
import { reindex } from '../search/reindex.js';
import { searchOrgs } from '../search/search-orgs.js';
import { driftCount, verifyIndex } from '../search/verify.js';
import { createTestDb, type TestDb } from './support/db.js';
import { testIndexName, testMeiliClient, testMeiliConnection } from './support/meili.js';
import { insertOrgs, renameOrg, type TestOrg } from './support/orgs.js';

/**
 * An installation upgraded from the first index format (every suffix as a filter value): its old
 * index keeps serving and syncing until `bizdir reindex` swaps in the current format.
 */
const SUFFIX = 'bizdir.test';
let db: TestDb;
let meili: Meilisearch;
let indexUid: string;
let orgs: TestOrg[];

async function search(q: string) {
  const page = await searchOrgs(
    { db: db.db, meili: createMeiliClient(testMeiliConnection()), indexUid, domainSuffix: SUFFIX },
    { q, sort: 'name', limit: 20, offset: 0 },
  );
  return { total: page.total, ids: page.ids };
}

beforeAll(async () => {
  db = await createTestDb();
  meili = testMeiliClient();
  indexUid = testIndexName('upgrade');
  orgs = await insertOrgs(db.db, [
    { name: 'ACME WIDGETS LTD' },
    { name: 'BRIDGET JONES LTD' },
    { name: 'ZEBRA CO' },
  ]);
  // The index as the previous release left it.
  await succeeded(meili.createIndex(indexUid, { primaryKey: 'id' }));
  await succeeded(meili.index(indexUid).updateSettings(V1_INDEX_SETTINGS));
  const rows = await db.db
    .selectFrom('orgs')
    .select(['id', 'uid', 'name', 'version_number', 'updated'])
    .execute();
  await succeeded(
    meili
      .index(indexUid)
      .addDocuments(rows.map((r) => toV1OrgDocument({ ...r, updated: new Date(r.updated) }))),
  );
  await db.db.deleteFrom('search_outbox').execute();
});

afterAll(async () => {
  await meili?.deleteIndexIfExists(indexUid);
  await db?.drop();
});

describe('upgrading from the v1 index', () => {
  it('the old index keeps answering, and sync keeps it current in its own format', async () => {
    expect(await indexFormat(meili, indexUid)).toBe(1);
    expect(await search('idget')).toEqual({ total: 2, ids: [orgs[0]!.id, orgs[1]!.id] });
    await renameOrg(db.db, orgs[2]!.id, 'ZEBRA WIDGETS CO');
    await syncOutbox({ db: db.db, meili, indexUid });
    expect(await indexFormat(meili, indexUid)).toBe(1);
    expect((await search('idget')).total).toBe(3);
    expect(driftCount(await verifyIndex(db.db, meili, indexUid))).toBe(0);
  });

  it('reindex swaps in the current format; a search right after the swap is still right', async () => {
    // Remember the old format in this process, then swap under it.
    expect((await search('jones')).total).toBe(1);
    await reindex({ db: db.db, meili, indexUid });
    expect(await indexFormat(meili, indexUid)).toBe(2);
    expect(await search('jones')).toEqual({ total: 1, ids: [orgs[1]!.id] });
    expect((await search('idget')).total).toBe(3);
    expect(driftCount(await verifyIndex(db.db, meili, indexUid))).toBe(0);
  });
});
