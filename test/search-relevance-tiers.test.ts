import type { Meilisearch } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureOrgIndex } from '../search/index-definition.js';
import { createMeiliClient } from '../search/meili-client.js';
import { foldName } from '../search/name-text.js';
import { syncOutbox } from '../search/org-sync.js';
import { SHALLOW_TIERS_DEPTH } from '../search/relevance-tiers.js';
import { searchOrgs } from '../search/search-service.js';
import { uidOf } from '../shared/org-domains.read-model.js';
import { createTestDb, type TestDb } from './support/db.js';
import { testIndexName, testMeiliClient, testMeiliConnection } from './support/meili.js';
import { insertOrgs, type TestOrg } from './support/orgs.js';

// `sort=relevance` (relevance-tiers.ts tieredPage) asks for a shallow page's second tier (the names
// starting with the term) and third tier (the other matches) at once, and for a page deeper than
// SHALLOW_TIERS_DEPTH the second tier's size first, then each tier's part of the page. `zeta` has a
// second tier larger than SHALLOW_TIERS_DEPTH, so its deep pages start inside it, at its end and past
// it; `alpha` has a smaller one.
const BIG_SECOND = SHALLOW_TIERS_DEPTH + 40;
const NAMES = [
  'ZETA',
  ...Array.from({ length: BIG_SECOND }, (_, i) => `ZETA ${i} LTD`),
  ...Array.from({ length: 160 }, (_, i) => `ALPHA ZETA ${i} LTD`),
  ...Array.from({ length: 60 }, (_, i) => `OMEGA ALPHA ${i}`),
];

let db: TestDb;
let meili: Meilisearch;
const indexUid = testIndexName('tiers');
let orgs: TestOrg[];

beforeAll(async () => {
  db = await createTestDb();
  meili = testMeiliClient();
  orgs = await insertOrgs(
    db.db,
    NAMES.map((name) => ({ name })),
  );
  await ensureOrgIndex(meili, indexUid);
  await syncOutbox({ db: db.db, meili, indexUid });
});

afterAll(async () => {
  await meili?.deleteIndexIfExists(indexUid);
  await db?.drop();
});

/** The relevance order, written plainly: whole name, then names starting with the term, then the rest; each by stable domain. */
async function expected(term: string): Promise<number[]> {
  const f = foldName(term);
  const rows = await db.db
    .selectFrom('orgs')
    .select(['id', uidOf('orgs').as('uid'), 'name'])
    .where(
      'id',
      'in',
      orgs.map((o) => o.id),
    )
    .execute();
  const tier = (name: string) => (foldName(name) === f ? 0 : foldName(name).startsWith(f) ? 1 : 2);
  return rows
    .filter((r) => foldName(r.name).includes(f))
    .sort((a, b) => tier(a.name) - tier(b.name) || (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0))
    .map((r) => r.id);
}

describe('relevance tiers', () => {
  it('the data holds what the cases need', async () => {
    const zeta = await expected('zeta');
    expect(zeta.length).toBe(1 + BIG_SECOND + 160);
    expect((await expected('alpha')).length).toBe(220);
  });

  it.each(['zeta', 'alpha'])('every page and total of %s, around and past the second tier', async (term) => {
    const want = await expected(term);
    const offsets = [
      0,
      1,
      100,
      159,
      160,
      161,
      200,
      BIG_SECOND - 1,
      BIG_SECOND,
      BIG_SECOND + 1,
      300,
      350,
      380,
    ];
    for (const offset of [...offsets, want.length - 1, want.length, want.length + 3]) {
      for (const limit of [1, 20, 100]) {
        const page = await searchOrgs(
          {
            db: db.db,
            meili: createMeiliClient(testMeiliConnection()),
            indexUid,
            domainSuffix: 'bizdir.test',
            freshChanges: false,
          },
          { q: term, sort: 'relevance', limit, offset },
        );
        expect({ offset, limit, total: page.total, ids: page.ids }).toEqual({
          offset,
          limit,
          total: want.length,
          ids: want.slice(offset, offset + limit),
        });
      }
    }
  });
});
