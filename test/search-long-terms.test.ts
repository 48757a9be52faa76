import type { Meilisearch } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureOrgIndex } from '../search/index-definition.js';
import { createMeiliClient } from '../search/meili-client.js';
import { foldName } from '../search/name-text.js';
import { syncOutbox } from '../search/org-sync.js';
import { ORG_SORTS, type OrgSort } from '../search/search-query.js';
import { searchOrgs } from '../search/search-service.js';
import { SMALL_ANSWER } from '../search/small-answer.js';
import { uidOf } from '../shared/org-domains.read-model.js';
import { createTestDb, type TestDb } from './support/db.js';
import { testIndexName, testMeiliClient, testMeiliConnection } from './support/meili.js';
import { insertOrgs, type TestOrg } from './support/orgs.js';

// Long terms are first looked up by a cover of their trigrams (every third, and the last) and,
// when few names hold it, checked and sorted without the full plan (small-answer.ts).
// `abcdefghij`'s cover is abc, def, ghi, hij: the names below hold all four without the term
// (false candidates the check must drop), and true matches in each relevance tier.
const TERM = 'abcdefghij';
const NAMES = [
  'THE ABCDEFGHIJ CO',
  'ABCDEFGHIJ LTD',
  'XABCDEFGHIJX LIMITED',
  'ABCDEFGHIJ HOLDINGS',
  'ABCDEFGHIJ',
  'DEF ABC GHIJ LTD',
  'GHIJ DEF ABC',
  'ABC-DEF-GHIJ LTD',
  'ABCDEF GHIJ',
  'ABCDEFGHI J',
];
/** More names holding the cover than SMALL_ANSWER: the full plan answers, the same way. */
const CROWD = 'klmnopqrst';

let db: TestDb;
let meili: Meilisearch;
const indexUid = testIndexName('longterms');
let orgs: TestOrg[];

beforeAll(async () => {
  db = await createTestDb();
  meili = testMeiliClient();
  const base = Date.UTC(2024, 0, 1);
  const names = [
    ...NAMES,
    ...Array.from({ length: SMALL_ANSWER + 5 }, (_, i) =>
      i % 2 === 0 ? `KLMNOPQRST ${i}` : `NOP KLM QRS RST ${i}`,
    ),
  ];
  // Two Orgs share an `updated`: ties in the `updated` sorts break on the stable domain.
  orgs = await insertOrgs(
    db.db,
    names.map((name, i) => ({ name, updated: new Date(base + (i === 1 ? 0 : i) * 60_000) })),
  );
  await ensureOrgIndex(meili, indexUid);
  await syncOutbox({ db: db.db, meili, indexUid });
});

afterAll(async () => {
  await meili?.deleteIndexIfExists(indexUid);
  await db?.drop();
});

/** The answer, written plainly. */
async function expected(term: string, sort: OrgSort): Promise<number[]> {
  const f = foldName(term);
  const rows = await db.db
    .selectFrom('orgs')
    .select(['id', uidOf('orgs').as('uid'), 'name', 'updated'])
    .where(
      'id',
      'in',
      orgs.map((o) => o.id),
    )
    .execute();
  const matches = rows.filter((r) => foldName(r.name).includes(f));
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const byUid = (a: (typeof rows)[0], b: (typeof rows)[0]) => cmp(a.uid, b.uid);
  const time = (r: (typeof rows)[0]) => new Date(r.updated).getTime();
  const tier = (r: (typeof rows)[0]) => {
    const name = foldName(r.name);
    return name === f ? 0 : name.startsWith(f) ? 1 : 2;
  };
  const order: Record<OrgSort, (a: (typeof rows)[0], b: (typeof rows)[0]) => number> = {
    name: (a, b) => cmp(foldName(a.name), foldName(b.name)) || byUid(a, b),
    '-name': (a, b) => cmp(foldName(b.name), foldName(a.name)) || byUid(a, b),
    updated: (a, b) => time(a) - time(b) || byUid(a, b),
    '-updated': (a, b) => time(b) - time(a) || byUid(a, b),
    relevance: (a, b) => tier(a) - tier(b) || byUid(a, b),
  };
  return matches.sort(order[sort]).map((r) => r.id);
}

describe('long terms', () => {
  it.each(ORG_SORTS)(
    'every page and total of a long term, sort=%s, false candidates dropped',
    async (sort) => {
      for (const term of [TERM, 'ABCDEFGHIJ L', ' abcdefghij ', CROWD, 'klmnopqrst 1', 'abcdefghijk']) {
        const want = await expected(term, sort);
        for (const [offset, limit] of [
          [0, 100],
          [0, 2],
          [1, 2],
          [3, 5],
          [want.length, 3],
        ] as const) {
          const page = await searchOrgs(
            {
              db: db.db,
              meili: createMeiliClient(testMeiliConnection()),
              indexUid,
              domainSuffix: 'bizdir.test',
              freshChanges: false,
            },
            { q: term, sort, limit, offset },
          );
          expect({ term, offset, limit, total: page.total, ids: page.ids }).toEqual({
            term,
            offset,
            limit,
            total: want.length,
            ids: want.slice(offset, offset + limit),
          });
        }
      }
    },
  );

  it('the data holds what the cases need', async () => {
    expect((await expected(TERM, 'name')).length).toBe(5);
    expect((await expected(CROWD, 'name')).length).toBeGreaterThan(SMALL_ANSWER / 2);
  });
});
