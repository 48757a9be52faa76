import type { Meilisearch } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureOrgIndex } from '../search/index-definition.js';
import { createMeiliClient } from '../search/meili-client.js';
import { foldName } from '../search/name-text.js';
import { syncOutbox } from '../search/org-sync.js';
import type { OrgSort } from '../search/search-query.js';
import { searchOrgs } from '../search/search-service.js';
import { createTestDb, type TestDb } from './support/db.js';
import { testIndexName, testMeiliClient, testMeiliConnection } from './support/meili.js';
import { insertOrgs, renameOrg, type TestOrg } from './support/orgs.js';

const SUFFIX = 'bizdir.test';
const NAMES = [
  'ACME WIDGETS LTD',
  'BRIDGET JONES LTD',
  'WIDGÉTRY LIMITED',
  "O'NEILL & SONS LTD",
  '"QUOTED" TRADING LTD',
  'SMITH & JONES PLC',
  'acme widgets ltd',
  'CARET^WORKS LTD',
  'ZEBRA  HOLDINGS',
  'BACK\\SLASH LTD',
  'Café Crème Ltd',
  'WIDGET',
  'THE JONES GROUP',
  'OLD NAME HOLDINGS',
];

let db: TestDb;
let meili: Meilisearch;
let indexUid: string;
let orgs: TestOrg[];
let renamedOldSlug: string;

/** The semantics, written plainly: the reference every Meilisearch answer is checked against. */
function expected(q: string): TestOrg[] {
  const f = foldName(q);
  const lower = q.trim().toLowerCase();
  return orgs.filter(
    (o) =>
      foldName(o.name).includes(f) ||
      lower === `${o.uid}.gb.${SUFFIX}` ||
      lower === `${o.slug}.${SUFFIX}` ||
      (o.slug !== renamedOldSlug &&
        lower === `${renamedOldSlug}.${SUFFIX}` &&
        o.name === 'NEW NAME HOLDINGS'),
  );
}

const byDomain = (a: TestOrg, b: TestOrg) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0);
const byName = (a: TestOrg, b: TestOrg) => {
  const x = foldName(a.name);
  const y = foldName(b.name);
  return x < y ? -1 : x > y ? 1 : byDomain(a, b);
};

async function search(q: string, sort: OrgSort = 'name', limit = 100, offset = 0) {
  const page = await searchOrgs(
    {
      db: db.db,
      meili: createMeiliClient(testMeiliConnection()),
      indexUid,
      domainSuffix: SUFFIX,
      freshChanges: false,
    },
    { q, sort, limit, offset },
  );
  const names = page.ids.map((id) => orgs.find((o) => o.id === id)!.name);
  return { ...page, names };
}

beforeAll(async () => {
  db = await createTestDb();
  meili = testMeiliClient();
  indexUid = testIndexName('semantics');
  const base = Date.UTC(2024, 0, 1);
  orgs = await insertOrgs(
    db.db,
    // Two Orgs share an `updated` so the domain tie-break shows.
    NAMES.map((name, i) => ({ name, updated: new Date(base + (i === 3 ? 2 : i) * 86_400_000) })),
  );
  const old = orgs.find((o) => o.name === 'OLD NAME HOLDINGS')!;
  renamedOldSlug = old.slug;
  old.slug = await renameOrg(db.db, old.id, 'NEW NAME HOLDINGS');
  old.name = 'NEW NAME HOLDINGS';
  await ensureOrgIndex(meili, indexUid);
  const result = await syncOutbox({ db: db.db, meili, indexUid });
  expect(result.indexed).toBe(NAMES.length);
});

afterAll(async () => {
  await meili?.deleteIndexIfExists(indexUid);
  await db?.drop();
});

describe('matching', () => {
  it.each([
    ['idget', ['ACME WIDGETS LTD', 'acme widgets ltd', 'BRIDGET JONES LTD', 'WIDGET']],
    ['widget', ['ACME WIDGETS LTD', 'acme widgets ltd', 'WIDGET']],
    ['WIDGÉ', ['WIDGÉTRY LIMITED']],
    ['widgé', ['WIDGÉTRY LIMITED']],
    ['CAFÉ', ['Café Crème Ltd']],
    ['cafe', []],
    ['caf', ['Café Crème Ltd']],
    ['é', ['Café Crème Ltd', 'WIDGÉTRY LIMITED']],
    [
      'e ',
      ['ACME WIDGETS LTD', 'acme widgets ltd', 'Café Crème Ltd', 'NEW NAME HOLDINGS', 'THE JONES GROUP'],
    ],
    ['é c', ['Café Crème Ltd']],
    ['me widg', ['ACME WIDGETS LTD', 'acme widgets ltd']],
    [
      's lt',
      ['ACME WIDGETS LTD', 'acme widgets ltd', 'BRIDGET JONES LTD', "O'NEILL & SONS LTD", 'CARET^WORKS LTD'],
    ],
    [' & ', ["O'NEILL & SONS LTD", 'SMITH & JONES PLC']],
    ['&', ["O'NEILL & SONS LTD", 'SMITH & JONES PLC']],
    ["o'neill", ["O'NEILL & SONS LTD"]],
    ["'", ["O'NEILL & SONS LTD"]],
    ['"quoted"', ['"QUOTED" TRADING LTD']],
    ['"', ['"QUOTED" TRADING LTD']],
    ['^', ['CARET^WORKS LTD']],
    ['t^w', ['CARET^WORKS LTD']],
    ['\\', ['BACK\\SLASH LTD']],
    // A run of whitespace in the name or in q matches as one space.
    ['zebra  h', ['ZEBRA  HOLDINGS']],
    ['zebra h', ['ZEBRA  HOLDINGS']],
    ['zebra \t\n h', ['ZEBRA  HOLDINGS']],
    ['zebrah', []],
    [
      ' ltd',
      [
        'ACME WIDGETS LTD',
        'acme widgets ltd',
        'BACK\\SLASH LTD',
        'BRIDGET JONES LTD',
        'CARET^WORKS LTD',
        "O'NEILL & SONS LTD",
        '"QUOTED" TRADING LTD',
        'Café Crème Ltd',
      ],
    ],
    ['ltd ', []],
    ['new name', ['NEW NAME HOLDINGS']],
    ['old name', []],
    ['nonexistent', []],
  ])('q=%j finds exactly %j', async (q, want) => {
    const got = await search(q);
    expect([...got.names].sort()).toEqual([...want].sort());
    expect(got.total).toBe(want.length);
    expect(got.names).toEqual(
      expected(q)
        .sort(byName)
        .map((o) => o.name),
    );
  });

  it('matches an exact stable or public domain, any case, including an old public label', async () => {
    const jones = orgs.find((o) => o.name === 'THE JONES GROUP')!;
    for (const q of [`${jones.uid}.gb.${SUFFIX}`, `${jones.slug}.${SUFFIX}`.toUpperCase()]) {
      expect((await search(q)).ids).toEqual([jones.id]);
    }
    const renamed = orgs.find((o) => o.name === 'NEW NAME HOLDINGS')!;
    expect((await search(`${renamedOldSlug}.${SUFFIX}`)).ids).toEqual([renamed.id]);
    // A domain-looking term that names no Org matches nothing (and no name contains it).
    expect((await search(`zzzz9999.gb.${SUFFIX}`)).total).toBe(0);
  });

  it('lists every Org for an empty q', async () => {
    const got = await search('');
    expect(got.total).toBe(NAMES.length);
    expect(got.names).toEqual([...orgs].sort(byName).map((o) => o.name));
  });
});

describe('sorting and pages', () => {
  const byNameDesc = (a: TestOrg, b: TestOrg) => {
    const x = foldName(a.name);
    const y = foldName(b.name);
    return x < y ? 1 : x > y ? -1 : byDomain(a, b);
  };

  it.each([
    ['name', byName],
    ['-name', byNameDesc],
  ] as const)('sort=%s orders by folded name with ties by stable domain', async (sort, compare) => {
    const got = await search('', sort);
    expect(got.ids).toEqual([...orgs].sort(compare).map((o) => o.id));
  });

  it.each(['updated', '-updated'] as const)(
    'sort=%s orders by updated with ties by stable domain',
    async (sort) => {
      const rows = await db.db.selectFrom('orgs').select(['id', 'updated']).execute();
      const stamp = new Map(rows.map((r) => [r.id, new Date(r.updated as unknown as string).getTime()]));
      const got = await search('', sort);
      const want = [...orgs].sort((a, b) => {
        const d = (stamp.get(a.id)! - stamp.get(b.id)!) * (sort === 'updated' ? 1 : -1);
        return d !== 0 ? d : byDomain(a, b);
      });
      expect(got.ids).toEqual(want.map((o) => o.id));
    },
  );

  it('sort=relevance: domain or whole name, then names starting with q, then the other matches; ties by domain', async () => {
    const ids = (...names: string[]) =>
      orgs
        .filter((o) => names.includes(o.name))
        .sort(byDomain)
        .map((o) => o.id);
    const wid = await search('wid', 'relevance');
    expect(wid.ids).toEqual([
      ...ids('WIDGET', 'WIDGÉTRY LIMITED'),
      ...ids('ACME WIDGETS LTD', 'acme widgets ltd'),
    ]);
    const widget = await search('widget', 'relevance');
    expect(widget.ids).toEqual([...ids('WIDGET'), ...ids('ACME WIDGETS LTD', 'acme widgets ltd')]);
    const dget = await search('dget', 'relevance');
    expect(dget.ids).toEqual(ids('WIDGET', 'ACME WIDGETS LTD', 'acme widgets ltd', 'BRIDGET JONES LTD'));
    // Pages cut across tiers without losing or repeating an Org.
    const paged = await Promise.all([0, 1, 2, 3].map((offset) => search('wid', 'relevance', 1, offset)));
    expect(paged.flatMap((p) => p.ids)).toEqual(wid.ids);
    expect(paged.every((p) => p.total === 4)).toBe(true);
    const cross = await search('wid', 'relevance', 2, 1);
    expect(cross.ids).toEqual(wid.ids.slice(1, 3));
  });

  it('pages through exact totals at the edges', async () => {
    const all = await search('', 'name');
    const pages = [];
    for (let offset = 0; offset < NAMES.length + 3; offset += 5)
      pages.push(await search('', 'name', 5, offset));
    expect(pages.flatMap((p) => p.ids)).toEqual(all.ids);
    expect(pages.every((p) => p.total === NAMES.length)).toBe(true);
    const last = await search('', 'name', 100, NAMES.length - 1);
    expect(last.ids).toEqual(all.ids.slice(-1));
    const beyond = await search('', 'name', 100, NAMES.length);
    expect(beyond).toMatchObject({ ids: [], total: NAMES.length });
  });
});
