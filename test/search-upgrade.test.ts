import type { Meilisearch, Settings } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { legacySettings, ORG_INDEX_FORMAT, ORG_INDEX_SETTINGS } from '../search/index-definition.js';
import { V1_INDEX_SETTINGS } from '../search/legacy-v1/index-settings.js';
import { toV1OrgDocument } from '../search/legacy-v1/org-document.js';
import { createMeiliClient, ensureOrgIndex, indexFormat, succeeded } from '../search/meili-client.js';
import { foldName, nameSortKey } from '../search/name-text.js';
import {
  type OrgRowForIndex,
  toOrgDocument,
  toV2OrgDocument,
  toV3OrgDocument,
  toV4OrgDocument,
  toV5OrgDocument,
  toV6OrgDocument,
} from '../search/org-document.js';
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

async function search(q: string, sort: OrgSort = 'name', uid = indexUid, freshChanges = false) {
  const page = await searchOrgs(
    {
      db: db.db,
      meili: createMeiliClient(testMeiliConnection()),
      indexUid: uid,
      domainSuffix: SUFFIX,
      freshChanges,
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
    await oldFormatIndex(v2Uid, legacySettings(2), toV2OrgDocument);
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

describe.each([
  { format: 3 as const, what: 'exact sort keys without buckets', toDocument: toV3OrgDocument },
  { format: 4 as const, what: '`updated` sorted on `t`, Orgs filtered by id', toDocument: toV4OrgDocument },
  { format: 5 as const, what: 'every name bucketed at three characters', toDocument: toV5OrgDocument },
  { format: 6 as const, what: 'buckets without their first characters', toDocument: toV6OrgDocument },
])('upgrading from the v$format index ($what)', ({ format, toDocument }) => {
  let oldUid: string;
  /** The Orgs of this case: names start with this word (the other case's do not match it). */
  const word = `BUCKET${format}`;
  /** Ids of this case's Orgs in the order of each sort, from Postgres (ties by stable domain). */
  async function expected(sort: OrgSort) {
    const rows = await db.db
      .selectFrom('orgs')
      .select(['id', uidOf('orgs').as('uid'), 'name', 'updated'])
      .where('name', 'like', `${word} %`)
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
  /**
   * Every sort answers as Postgres orders it: with the changes not yet synced searched beside the
   * index and, when everything is synced, from the index alone too.
   */
  async function everySortRight(synced = true) {
    for (const sort of sorts) {
      if (synced) expect((await search(word, sort, oldUid)).ids).toEqual(await expected(sort));
      expect((await search(word, sort, oldUid, true)).ids).toEqual(await expected(sort));
    }
  }

  beforeAll(async () => {
    oldUid = testIndexName(`upgrade-v${format}`);
    await insertOrgs(db.db, [
      { name: `${word} ALPHA LTD` },
      { name: `${word} ALPHA LTD` },
      { name: `${word} BETA LTD` },
      { name: `${word} ÉTÉ LTD` },
      { name: `${word} 9 LTD` },
      { name: `${word} GAMMA LTD` },
    ]);
    await db.db
      .updateTable('orgs')
      .set({ updated: new Date('2026-03-04T05:06:07.890Z') })
      .where('name', 'like', `${word} A%`)
      .execute();
    await oldFormatIndex(oldUid, legacySettings(format), toDocument);
    await db.db.deleteFrom('search_outbox').execute();
  });

  afterAll(async () => {
    await meili?.deleteIndexIfExists(oldUid);
  });

  it('keeps serving every sort and syncing in its own format, then reindex moves it to the current one', async () => {
    expect(await indexFormat(meili, oldUid)).toBe(format);
    await everySortRight();
    const idOf = async (name: string) =>
      Number(
        (await db.db.selectFrom('orgs').select('id').where('name', '=', name).executeTakeFirstOrThrow()).id,
      );
    const renamed = await idOf(`${word} BETA LTD`);
    await renameOrg(db.db, renamed, `${word} AARDVARK LTD`);
    await syncOutbox({ db: db.db, meili, indexUid: oldUid });
    expect(await indexFormat(meili, oldUid)).toBe(format);
    const doc = await meili.index(oldUid).getDocument(renamed);
    expect(Object.keys(doc).sort()).toEqual(Object.keys(toDocument(await rowOf(renamed))).sort());
    await everySortRight();
    // A change not yet synced: left out of the old index's answers by that format's own filter.
    await renameOrg(db.db, await idOf(`${word} GAMMA LTD`), `${word} 0 LTD`);
    await everySortRight(false);

    await reindex({ db: db.db, meili, indexUid: oldUid });
    expect(await indexFormat(meili, oldUid)).toBe(ORG_INDEX_FORMAT);
    const after = await meili.index(oldUid).getDocument(renamed);
    expect(after).toHaveProperty('np');
    expect(after).toHaveProperty('n1');
    expect(after).toHaveProperty('d1');
    expect(after).not.toHaveProperty('nb');
    expect(after).not.toHaveProperty('t');
    await everySortRight();
    // And in the current format: a change not yet synced, searched beside the index.
    await renameOrg(db.db, renamed, `${word} ZULU LTD`);
    await everySortRight(false);
    expect((await search(`${word} zulu`, 'name', oldUid, true)).ids).toEqual([renamed]);
    await syncOutbox({ db: db.db, meili, indexUid: oldUid });
    expect(driftCount(await verifyIndex(db.db, meili, oldUid))).toBe(0);
  });
});

/** An Org row as the index documents are made from it. */
async function rowOf(id: number): Promise<OrgRowForIndex> {
  const r = await db.db
    .selectFrom('orgs')
    .select(['id', uidOf('orgs').as('uid'), 'name', 'version_number', 'updated'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return { ...r, id: Number(r.id), updated: new Date(r.updated) };
}

describe('an index of the current format built before the words were declared English', () => {
  let oldUid: string;
  const word = 'LOCALE5';

  beforeAll(async () => {
    oldUid = testIndexName('upgrade-locale');
    await insertOrgs(db.db, [{ name: `${word} ALPHA LTD` }, { name: `${word} BETA LTD` }]);
    const { localizedAttributes: _none, ...before } = ORG_INDEX_SETTINGS;
    await oldFormatIndex(oldUid, before, toOrgDocument);
    await db.db.deleteFrom('search_outbox').execute();
  });

  afterAll(async () => {
    await meili?.deleteIndexIfExists(oldUid);
  });

  it('keeps its detected language at start-up (no re-tokenizing task), and gets English at reindex', async () => {
    const tasksBefore = (await meili.tasks.getTasks({ indexUids: [oldUid], limit: 1 })).results[0]!.uid;
    expect(await ensureOrgIndex(meili, oldUid)).toBe(ORG_INDEX_FORMAT);
    expect(await meili.index(oldUid).getLocalizedAttributes()).toBeNull();
    // The settings update start-up sent changed nothing, so Meilisearch indexed nothing again.
    const [task] = (await meili.tasks.getTasks({ indexUids: [oldUid], limit: 1 })).results;
    expect(task!.uid).toBeGreaterThan(tasksBefore);
    expect(task!.details).not.toHaveProperty('localizedAttributes');
    expect((await search(`${word.toLowerCase()} al`, 'name', oldUid)).total).toBe(1);

    await reindex({ db: db.db, meili, indexUid: oldUid });
    expect(await meili.index(oldUid).getLocalizedAttributes()).toEqual(
      ORG_INDEX_SETTINGS.localizedAttributes,
    );
    expect((await search(`${word.toLowerCase()} al`, 'name', oldUid)).total).toBe(1);
    expect((await search('ta lt', 'name', oldUid)).total).toBeGreaterThanOrEqual(1);
    expect(driftCount(await verifyIndex(db.db, meili, oldUid))).toBe(0);
  });

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
});

describe('an index a later release built', () => {
  it('is left as it is at start-up: its extra sort keys stay, and it answers with this release rules', async () => {
    const uid = testIndexName('later-format');
    try {
      const later = {
        ...ORG_INDEX_SETTINGS,
        sortableAttributes: [...(ORG_INDEX_SETTINGS.sortableAttributes ?? []), 'zz'],
      };
      await oldFormatIndex(uid, later, (row) => ({ ...toOrgDocument(row), zz: 'z' }));
      expect(await ensureOrgIndex(meili, uid)).toBe(ORG_INDEX_FORMAT);
      expect(await meili.index(uid).getSortableAttributes()).toContain('zz');
      const acme = orgs.find((o) => o.name === 'ACME WIDGETS LTD')!;
      expect((await search('acme', 'name', uid)).ids).toEqual([acme.id]);
    } finally {
      await meili.deleteIndexIfExists(uid);
    }
  });
});
