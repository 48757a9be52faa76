import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocateSlugs, recordSlugs } from '../ingest/public-domains.js';
import { createTestDb, type TestDb } from './support/db.js';

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(async () => {
  await t?.drop();
});

async function insertOrg(name: string, slug: string): Promise<number> {
  const row = await t.db
    .insertInto('orgs')
    .values({ domain_cc: 'gb', public_slug: slug, name, content_hash: 'x' })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

describe('schema', () => {
  it('gives every record a short, lower-case, unique stable id that never changes', async () => {
    const id = await insertOrg('A LTD', 'a-ltd');
    const before = await t.db
      .selectFrom('orgs')
      .select(['uid'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(before.uid).toMatch(/^[a-z0-9]{8}$/);
    await t.db.updateTable('orgs').set({ name: 'B LTD' }).where('id', '=', id).execute();
    const after = await t.db
      .selectFrom('orgs')
      .select(['uid'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(after.uid).toBe(before.uid);
    const { rows } = await sql<{ n: number; d: number }>`
      select count(*)::int as n, count(distinct bizdir_uid(g))::int as d from generate_series(1, 100000) g`.execute(
      t.db,
    );
    expect(rows[0]).toEqual({ n: 100000, d: 100000 });
  });

  it('refuses a second Org with the same registration', async () => {
    const values = {
      domain_cc: 'gb',
      name: 'X',
      content_hash: 'x',
      registration_country: 'GB',
      registration_number: '00000001',
    };
    await t.db
      .insertInto('orgs')
      .values({ ...values, public_slug: 'x-1' })
      .execute();
    await expect(
      t.db
        .insertInto('orgs')
        .values({ ...values, public_slug: 'x-2' })
        .execute(),
    ).rejects.toThrow(/orgs_registration_key/);
  });
});

describe('public domain labels', () => {
  it('numbers clashes, skips labels held as plain names, and never hands one out twice', async () => {
    const slugs = await t.db.transaction().execute(async (trx) => {
      const first = await allocateSlugs(trx, 'org', [{ base: 'acme' }, { base: 'acme-2' }, { base: 'acme' }]);
      return first;
    });
    // 'acme-2' was asked for as a plain name, so the second 'acme' must not get it.
    expect(slugs[0]).toBe('acme');
    expect(slugs[1]).toBe('acme-2');
    expect(slugs[2]).not.toBe('acme-2');
    expect(new Set(slugs).size).toBe(3);
  });

  it('gives a renamed Org its old label back, and keeps old labels from others', async () => {
    const id = await t.db.transaction().execute(async (trx) => {
      const [slug] = await allocateSlugs(trx, 'org', [{ base: 'harbour-light' }]);
      const row = await trx
        .insertInto('orgs')
        .values({ domain_cc: 'gb', public_slug: slug!, name: 'HARBOUR LIGHT', content_hash: 'x' })
        .returning('id')
        .executeTakeFirstOrThrow();
      await recordSlugs(trx, 'org', [{ slug: slug!, ownerId: row.id }]);
      return row.id;
    });
    const renamed = await t.db.transaction().execute(async (trx) => {
      const [slug] = await allocateSlugs(trx, 'org', [{ base: 'quay-light', ownerId: id }]);
      await recordSlugs(trx, 'org', [{ slug: slug!, ownerId: id }]);
      return slug;
    });
    expect(renamed).toBe('quay-light');
    const [back, other] = await t.db
      .transaction()
      .execute((trx) =>
        allocateSlugs(trx, 'org', [{ base: 'harbour-light', ownerId: id }, { base: 'harbour-light' }]),
      );
    expect(back).toBe('harbour-light');
    expect(other).toBe('harbour-light-2');
  });

  it('lets two concurrent allocators never pick the same label', async () => {
    const run = () =>
      t.db.transaction().execute(async (trx) => {
        const slugs = await allocateSlugs(
          trx,
          'org',
          Array.from({ length: 50 }, () => ({ base: 'same-name' })),
        );
        await recordSlugs(
          trx,
          'org',
          await Promise.all(slugs.map(async (slug) => ({ slug, ownerId: await insertOrgTrx(trx, slug) }))),
        );
        return slugs;
      });
    const [a, b] = await Promise.all([run(), run()]);
    expect(new Set([...a, ...b]).size).toBe(100);
  });
});

async function insertOrgTrx(trx: Parameters<typeof recordSlugs>[0], slug: string): Promise<number> {
  const row = await trx
    .insertInto('orgs')
    .values({ domain_cc: 'gb', public_slug: slug, name: slug, content_hash: 'x' })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}
