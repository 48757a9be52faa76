import type { Meilisearch, Settings } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ORG_INDEX_FORMAT,
  ORG_INDEX_SETTINGS,
  V2_SORTABLE,
  V3_SORTABLE,
} from '../search/index-definition.js';
import { V1_INDEX_SETTINGS } from '../search/legacy-v1/index-settings.js';
import { toV1OrgDocument } from '../search/legacy-v1/org-document.js';
import { createMeiliClient, indexFormat, succeeded } from '../search/meili-client.js';
import { foldName, nameSortKey } from '../search/name-text.js';
import { type OrgRowForIndex, toV2OrgDocument, toV3OrgDocument } from '../search/org-document.js';
import type { OrgSort } from '../search/org-search.js';
import { syncOutbox } from '../search/org-sync.js';
import { reindex } from '../search/reindex.js';
import { searchOrgs } from '../search/search-orgs.js';
import { driftCount, verifyIndex } from '../search/verify.js';
import { uidOf } from '../shared/org-domains.js';
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

async function search(q: string, sort: OrgSort = 'name', uid = indexUid) {
  const page = await searchOrgs(
    {
      db: db.db,
      meili: createMeiliClient(testMeiliConnection()),
      indexUid: uid,
      domainSuffix: SUFFIX,
      freshChanges: false,
    },
    { q, sort, limit: 20, offset: 0 },
  );
  return { total: page.total, ids: page.ids };
}

/** An index of an older format, holding every Org of the test database, as that release wrote it. */
async function oldFormatIndex(uid: string, settings: Settings, toDocument: (row: OrgRowForIndex) => object) {
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
  await oldFormatIndex(indexUid, V1_INDEX_SETTINGS, toV1OrgDocument);
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
    expect(await indexFormat(meili, indexUid)).toBe(ORG_INDEX_FORMAT);
    expect(await search('jones')).toEqual({ total: 1, ids: [orgs[1]!.id] });
    expect((await search('idget')).total).toBe(3);
    expect(driftCount(await verifyIndex(db.db, meili, indexUid))).toBe(0);
  });
});

describe('upgrading from the v2 index (updated sorted on u, tie-broken on d)', () => {
  let v2Uid: string;
  /** Ids in the order of `updated` (ties by stable domain), from Postgres. */
  async function byUpdated(direction: 'asc' | 'desc', nameLike: string) {
    const rows = await db.db
      .selectFrom('orgs')
      .select(['id', uidOf('orgs').as('uid'), 'updated'])
      .where('name', 'like', nameLike)
      .execute();
    const ms = (r: { updated: unknown }) => new Date(r.updated as string).getTime();
    return rows
      .sort((a, b) => (ms(a) - ms(b)) * (direction === 'asc' ? 1 : -1) || (a.uid < b.uid ? -1 : 1))
      .map((r) => Number(r.id));
  }

  beforeAll(async () => {
    v2Uid = testIndexName('upgrade-v2');
    // Several Orgs with the same `updated`, as one import transaction writes them.
    await insertOrgs(db.db, [
      { name: 'TIED ONE LTD' },
      { name: 'TIED TWO LTD' },
      { name: 'TIED THREE LTD' },
      { name: 'TIED FOUR LTD' },
    ]);
    await db.db
      .updateTable('orgs')
      .set({ updated: new Date('2026-01-02T03:04:05.678Z') })
      .where('name', 'like', 'TIED %')
      .execute();
    await oldFormatIndex(
      v2Uid,
      { ...ORG_INDEX_SETTINGS, sortableAttributes: [...V2_SORTABLE] },
      toV2OrgDocument,
    );
  });

  afterAll(async () => {
    await meili?.deleteIndexIfExists(v2Uid);
  });

  it('keeps serving both updated sorts in its own format, then reindex moves it to the current one', async () => {
    expect(await indexFormat(meili, v2Uid)).toBe(2);
    const asc = await byUpdated('asc', 'TIED %');
    const desc = await byUpdated('desc', 'TIED %');
    expect((await search('tied', 'updated', v2Uid)).ids).toEqual(asc);
    expect((await search('tied', '-updated', v2Uid)).ids).toEqual(desc);
    await reindex({ db: db.db, meili, indexUid: v2Uid });
    expect(await indexFormat(meili, v2Uid)).toBe(ORG_INDEX_FORMAT);
    expect((await search('tied', 'updated', v2Uid)).ids).toEqual(asc);
    expect((await search('tied', '-updated', v2Uid)).ids).toEqual(desc);
    expect(driftCount(await verifyIndex(db.db, meili, v2Uid))).toBe(0);
  });
});

describe('upgrading from the v3 index (exact sort keys without buckets)', () => {
  let v3Uid: string;
  /** Ids of the `BUCKET %` Orgs in the order of each sort, from Postgres (ties by stable domain). */
  async function expected(sort: OrgSort) {
    const rows = await db.db
      .selectFrom('orgs')
      .select(['id', uidOf('orgs').as('uid'), 'name', 'updated'])
      .where('name', 'like', 'BUCKET %')
      .execute();
    const key = (r: { name: string }) => nameSortKey(foldName(r.name));
    const ms = (r: { updated: unknown }) => new Date(r.updated as string).getTime();
    const byUid = (a: { uid: string }, b: { uid: string }) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0);
    const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
    const order: Record<OrgSort, (a: (typeof rows)[0], b: (typeof rows)[0]) => number> = {
      name: (a, b) => cmp(key(a), key(b)) || byUid(a, b),
      '-name': (a, b) => cmp(key(b), key(a)) || byUid(a, b),
      updated: (a, b) => ms(a) - ms(b) || byUid(a, b),
      '-updated': (a, b) => ms(b) - ms(a) || byUid(a, b),
      relevance: byUid,
    };
    return rows.sort(order[sort]).map((r) => Number(r.id));
  }
  const sorts: OrgSort[] = ['name', '-name', 'updated', '-updated', 'relevance'];

  beforeAll(async () => {
    v3Uid = testIndexName('upgrade-v3');
    await insertOrgs(db.db, [
      { name: 'BUCKET ALPHA LTD' },
      { name: 'BUCKET ALPHA LTD' },
      { name: 'BUCKET BETA LTD' },
      { name: 'BUCKET ÉTÉ LTD' },
      { name: 'BUCKET 9 LTD' },
    ]);
    await db.db
      .updateTable('orgs')
      .set({ updated: new Date('2026-03-04T05:06:07.890Z') })
      .where('name', 'like', 'BUCKET A%')
      .execute();
    await oldFormatIndex(
      v3Uid,
      { ...ORG_INDEX_SETTINGS, sortableAttributes: [...V3_SORTABLE] },
      toV3OrgDocument,
    );
    await db.db.deleteFrom('search_outbox').execute();
  });

  afterAll(async () => {
    await meili?.deleteIndexIfExists(v3Uid);
  });

  it('keeps serving every sort and syncing in its own format, then reindex moves it to the current one', async () => {
    expect(await indexFormat(meili, v3Uid)).toBe(3);
    for (const sort of sorts) expect((await search('bucket', sort, v3Uid)).ids).toEqual(await expected(sort));
    const [renamed] = await db.db
      .selectFrom('orgs')
      .select('id')
      .where('name', '=', 'BUCKET BETA LTD')
      .execute();
    await renameOrg(db.db, Number(renamed!.id), 'BUCKET AARDVARK LTD');
    await syncOutbox({ db: db.db, meili, indexUid: v3Uid });
    expect(await indexFormat(meili, v3Uid)).toBe(3);
    const doc = await meili.index(v3Uid).getDocument(Number(renamed!.id));
    expect(doc).not.toHaveProperty('nb');
    for (const sort of sorts) expect((await search('bucket', sort, v3Uid)).ids).toEqual(await expected(sort));

    await reindex({ db: db.db, meili, indexUid: v3Uid });
    expect(await indexFormat(meili, v3Uid)).toBe(ORG_INDEX_FORMAT);
    expect(await meili.index(v3Uid).getDocument(Number(renamed!.id))).toHaveProperty('nb');
    for (const sort of sorts) expect((await search('bucket', sort, v3Uid)).ids).toEqual(await expected(sort));
    expect(driftCount(await verifyIndex(db.db, meili, v3Uid))).toBe(0);
  });
});
