import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocateSlugs, keepFormerSlugs } from '../ingest/public-domains.js';
import { bizdirUid } from '../shared/domains.js';
import { uidOf } from '../shared/org-domains.read-model.js';
import { clientOf } from '../shared/pg-copy.js';
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

async function insertAddress(): Promise<number> {
  const row = await t.db
    .insertInto('addresses')
    .values({ domain_cc: 'gb', content_hash: 'a' })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

describe('schema', () => {
  it('gives every record a short, lower-case, unique stable id that never changes', async () => {
    const id = await insertOrg('A LTD', 'a-ltd');
    const before = await t.db
      .selectFrom('orgs')
      .select([uidOf('orgs').as('uid')])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(before.uid).toMatch(/^[a-z0-9]{8}$/);
    await t.db.updateTable('orgs').set({ name: 'B LTD' }).where('id', '=', id).execute();
    const after = await t.db
      .selectFrom('orgs')
      .select([uidOf('orgs').as('uid')])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(after.uid).toBe(before.uid);
    const { rows } = await sql<{ n: number; d: number }>`
      select count(*)::int as n, count(distinct bizdir_uid(g))::int as d from generate_series(1, 100000) g`.execute(
      t.db,
    );
    expect(rows[0]).toEqual({ n: 100000, d: 100000 });
  });

  it('stable ids: bizdirUid (computed in JavaScript, migration 0023) equals bizdir_uid for every id tried', async () => {
    // The ends of each half of the id, the ends of the id space, and 20,000 ids spread over it.
    const ids = [0, 1, 2, 1048575, 1048576, 1048577, 2 ** 39, 2 ** 40 - 2, 2 ** 40 - 1];
    for (let i = 0; i < 20_000; i++) ids.push(Math.floor((i * 2 ** 40) / 20_000) + (i % 997));
    const { rows } = await sql<{ id: string; uid: string }>`
      select id::text, bizdir_uid(id) as uid from unnest(${ids.map(String)}::bigint[]) as id`.execute(t.db);
    expect(rows).toHaveLength(ids.length);
    const differ = rows.filter((r) => bizdirUid(Number(r.id)) !== r.uid);
    expect(differ).toEqual([]);
    expect(() => bizdirUid(2 ** 40)).toThrow(RangeError);
    expect(() => bizdirUid(-1)).toThrow(RangeError);
  });

  it('stable ids: bizdir_uid as unrolled (migration 0014) gives every id the uid of the first version', async () => {
    // The function as migration 0001 created it, under another name, to compare with.
    await sql`
      create function bizdir_uid_0001(n bigint) returns text
      language plpgsql immutable strict parallel safe as $$
      declare
        l bigint := (n >> 20) & 1048575;
        r bigint := n & 1048575;
        t bigint;
        v bigint;
        s text := '';
        i int;
      begin
        for i in 1..4 loop
          t := r;
          r := l # ((((r * 1103515245 + 12345 + i * 7919) >> 7) # (r << 3)) & 1048575);
          l := t;
        end loop;
        v := (r << 20) | l;
        for i in 1..8 loop
          s := substr('0123456789abcdefghijklmnopqrstuvwxyz', (v % 36)::int + 1, 1) || s;
          v := v / 36;
        end loop;
        return s;
      end $$`.execute(t.db);
    try {
      const { rows } = await sql<{ n: number; differ: number }>`
        with ids as (
          select g as id from generate_series(0, 200000) g
          union all select (random() * 1099511627775)::bigint from generate_series(1, 100000)
          union all select unnest(array[1048575, 1048576, 1099511627775]::bigint[]))
        select count(*)::int as n, count(*) filter (where bizdir_uid(id) <> bizdir_uid_0001(id))::int as differ
        from ids`.execute(t.db);
      expect(rows[0]).toEqual({ n: 300004, differ: 0 });
    } finally {
      await sql`drop function bizdir_uid_0001(bigint)`.execute(t.db);
    }
    const { rows } = await sql<{ a: string; b: string; z: string; top: string }>`
      select bizdir_uid(1) as a, bizdir_uid(2) as b, bizdir_uid(0) as z, bizdir_uid(1099511627775) as top`.execute(
      t.db,
    );
    expect(rows[0]).toEqual({ a: '56mjgdp6', b: '8l7hjk74', z: '6pqmce5a', top: '1alfws88' });
    await expect(sql`select bizdir_uid(1099511627776)`.execute(t.db)).rejects.toThrow(/outside the id space/);
  });

  it('stable ids: bizdir_uid_id (migration 0020) gives back the id of every uid, and null for what no id has', async () => {
    const { rows } = await sql<{ n: number; wrong: number }>`
      with ids as (
        select g as id from generate_series(0, 200000) g
        union all select (random() * 1099511627775)::bigint from generate_series(1, 100000)
        union all select unnest(array[1048575, 1048576, 1099511627774, 1099511627775]::bigint[]))
      select count(*)::int as n,
        count(*) filter (where bizdir_uid_id(bizdir_uid(id)) is distinct from id)::int as wrong
      from ids`.execute(t.db);
    expect(rows[0]).toEqual({ n: 300005, wrong: 0 });
    const { rows: odd } = await sql<{ u: string; id: string | null }>`
      select u, bizdir_uid_id(u)::text as id
      from unnest(array['zzzzzzzz', 'ja1lfws88', '1alfws8', '1ALFWS88', '1alfws8_', '1alfws8é', '', ' 1alfws8', '1alfws89']) u`.execute(
      t.db,
    );
    // 'zzzzzzzz' is past the 40-bit id space; '1alfws89' is a well-formed uid of some id (checked above
    // for all that round-trip), so only it maps to a value.
    expect(odd.filter((r) => r.id !== null).map((r) => r.u)).toEqual(['1alfws89']);
    // The domain lookups find the row by primary key: uid has no index of its own on the imported tables
    // (and no column on orgs and addresses since 0023: hasUid rechecks bizdir_uid(id)).
    const { rows: plan } = await sql<{ 'QUERY PLAN': string }>`
      explain select id from orgs where id = bizdir_uid_id('56mjgdp6') and bizdir_uid(id) = '56mjgdp6'`.execute(
      t.db,
    );
    expect(plan.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/Index (Only )?Scan using orgs_pkey/);
    const { rows: indexes } = await sql<{ n: number }>`
      select count(*)::int as n from pg_indexes
      where tablename in ('orgs', 'addresses', 'locations') and indexdef like '%(uid)%'`.execute(t.db);
    expect(indexes[0]!.n).toBe(0);
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

  it('refuses references to a missing Address or Org, and deletes that would leave one (migration 0016)', async () => {
    const refused = { code: '23503' };
    const addressId = await insertAddress();
    const missing = 9_000_000_000;
    // An Org naming a missing Address, alone or among good rows, by insert or by update.
    await expect(
      t.db
        .insertInto('orgs')
        .values({
          domain_cc: 'gb',
          public_slug: 'fk-1',
          name: 'FK',
          content_hash: 'x',
          registered_address_id: missing,
        })
        .execute(),
    ).rejects.toMatchObject({ ...refused, constraint: 'orgs_registered_address_id_fkey' });
    await expect(
      sql`insert into orgs (domain_cc, public_slug, name, content_hash, registered_address_id)
        values ('gb', 'fk-2', 'FK', 'x', ${addressId}), ('gb', 'fk-3', 'FK', 'x', ${missing})`.execute(t.db),
    ).rejects.toMatchObject(refused);
    const org = await insertOrg('FK LTD', 'fk-ltd');
    await t.db.updateTable('orgs').set({ registered_address_id: addressId }).where('id', '=', org).execute();
    await expect(
      t.db.updateTable('orgs').set({ registered_address_id: missing }).where('id', '=', org).execute(),
    ).rejects.toMatchObject(refused);
    // Updates that leave the reference alone pass, and so do Orgs without an address.
    await t.db.updateTable('orgs').set({ name: 'FK LTD 2' }).where('id', '=', org).execute();
    // A label naming a missing Org (insert, COPY-like multi-row insert, update).
    await expect(
      sql`insert into org_public_domains (slug, org_id) values ('fk-label', ${missing})`.execute(t.db),
    ).rejects.toMatchObject({ ...refused, constraint: 'org_public_domains_org_id_fkey' });
    await sql`insert into org_public_domains (slug, org_id) values ('fk-ltd', ${org})`.execute(t.db);
    await expect(
      sql`update org_public_domains set org_id = ${missing} where slug = 'fk-ltd'`.execute(t.db),
    ).rejects.toMatchObject(refused);
    // Deleting an Org that still has labels, or an Address an Org points at.
    await expect(sql`delete from orgs where id = ${org}`.execute(t.db)).rejects.toMatchObject(refused);
    await expect(sql`delete from addresses where id = ${addressId}`.execute(t.db)).rejects.toMatchObject(
      refused,
    );
    const rows = await sql<{ n: number }>`
      select (select count(*) from orgs where id = ${org})::int
        + (select count(*) from addresses where id = ${addressId})::int as n`.execute(t.db);
    expect(rows.rows[0]?.n).toBe(2);
  });

  it('refuses Locations and Location labels that name a missing Org, Address or Location, and deletes that would leave one (migration 0021)', async () => {
    const refused = { code: '23503' };
    const org = await insertOrg('LOC FK LTD', 'loc-fk-ltd');
    const addressId = await insertAddress();
    const missing = 9_000_000_000;
    const location = (code: string, orgId: number, address: number | null) =>
      sql`(${'gb'}, ${`loc-fk-${code}`}, ${orgId}::bigint, ${code}, ${address}::bigint, 'x')`;
    const insert = (...rows: ReturnType<typeof location>[]) =>
      sql`insert into locations (domain_cc, public_slug, org_id, code, address_id, content_hash)
        values ${sql.join(rows)} returning id`.execute(t.db);
    // A Location naming a missing Org or Address, alone or among good rows.
    await expect(insert(location('a', missing, null))).rejects.toMatchObject({
      ...refused,
      constraint: 'locations_org_id_fkey',
    });
    await expect(insert(location('b', org, addressId), location('c', org, missing))).rejects.toMatchObject({
      ...refused,
      constraint: 'locations_address_id_fkey',
    });
    const { rows: made } = await insert(location('d', org, addressId), location('e', org, null));
    const [d, e] = made.map((r) => (r as { id: number }).id);
    // Updates that move a reference to nothing are refused; others pass.
    await expect(
      sql`update locations set org_id = ${missing} where id = ${d}`.execute(t.db),
    ).rejects.toMatchObject({
      ...refused,
      constraint: 'locations_org_id_fkey',
    });
    await expect(
      sql`update locations set address_id = ${missing} where id = ${e}`.execute(t.db),
    ).rejects.toMatchObject({ ...refused, constraint: 'locations_address_id_fkey' });
    await sql`update locations set name = 'Quay', address_id = ${addressId} where id in (${d}, ${e})`.execute(
      t.db,
    );
    // A label naming a missing Location, by insert or update.
    await expect(
      sql`insert into location_public_domains (slug, location_id) values ('loc-fk-x', ${missing})`.execute(
        t.db,
      ),
    ).rejects.toMatchObject({ ...refused, constraint: 'location_public_domains_location_id_fkey' });
    await sql`insert into location_public_domains (slug, location_id) values ('loc-fk-d', ${d})`.execute(
      t.db,
    );
    await expect(
      sql`update location_public_domains set location_id = ${missing} where slug = 'loc-fk-d'`.execute(t.db),
    ).rejects.toMatchObject(refused);
    // Deleting an Org or Address a Location names, or a Location that has labels.
    await expect(sql`delete from orgs where id = ${org}`.execute(t.db)).rejects.toMatchObject({
      ...refused,
      constraint: 'locations_org_id_fkey',
    });
    await expect(sql`delete from addresses where id = ${addressId}`.execute(t.db)).rejects.toMatchObject({
      ...refused,
      constraint: 'locations_address_id_fkey',
    });
    await expect(sql`delete from locations where id = ${d}`.execute(t.db)).rejects.toMatchObject({
      ...refused,
      constraint: 'location_public_domains_location_id_fkey',
    });
    // A Location without labels can go; nothing refused above was written.
    await sql`delete from locations where id = ${e}`.execute(t.db);
    const { rows: left } = await sql<{ locations: number; labels: number }>`
      select (select count(*) from locations where code like '_' and org_id = ${org})::int as locations,
        (select count(*) from location_public_domains where slug like 'loc-fk-%')::int as labels`.execute(
      t.db,
    );
    expect(left[0]).toEqual({ locations: 1, labels: 1 });
    const { rows: fks } = await sql<{ n: number }>`
      select count(*)::int as n from pg_constraint
      where contype = 'f' and conrelid in ('locations'::regclass, 'location_public_domains'::regclass)`.execute(
      t.db,
    );
    expect(fks[0]!.n).toBe(0);
  });

  it('plans each reference check for the statement at hand, not for the first one a session ran (migration 0021)', async () => {
    // A session whose first update of a table was one row, then updates 2,000: a check planned once
    // would keep the one-row plan (a nested loop over the two transition tables). auto_explain, at
    // notice level, hands the session the plan of each statement the checks run.
    const org = await insertOrg('PLAN LTD', 'plan-ltd');
    await sql`
      insert into orgs (domain_cc, public_slug, name, content_hash)
      select 'gb', 'plan-' || g, 'PLAN ' || g, 'x' from generate_series(1, 2000) g`.execute(t.db);
    await sql`
      insert into locations (domain_cc, public_slug, org_id, code, content_hash)
      select 'gb', 'plan-loc-' || g, ${org}::bigint, 'plan-' || g, 'x' from generate_series(1, 2000) g`.execute(
      t.db,
    );
    const plans: string[] = [];
    await t.db.connection().execute(async (conn) => {
      await sql`load 'auto_explain'`.execute(conn);
      await sql`set auto_explain.log_min_duration = 0`.execute(conn);
      await sql`set auto_explain.log_nested_statements = on`.execute(conn);
      await sql`set auto_explain.log_level = notice`.execute(conn);
      const client = await clientOf(conn);
      const onNotice = (n: { message?: string }) => {
        if (n.message?.includes('join old_rows')) plans.push(n.message);
      };
      client.on('notice', onNotice);
      try {
        for (const where of [sql`code = 'plan-1'`, sql`code like 'plan-%'`]) {
          await sql`update locations set name = 'x' where org_id = ${org} and ${where}`.execute(conn);
        }
        for (const where of [sql`public_slug = 'plan-1'`, sql`public_slug like 'plan-%'`]) {
          await sql`update orgs set name = name || ' ' where ${where}`.execute(conn);
        }
      } finally {
        client.off('notice', onNotice);
        await sql`set auto_explain.log_min_duration = -1`.execute(conn);
      }
    });
    // Two checks for the Location updates (org, address), one for the Org updates, each twice.
    // Three checks for each Location update (Org, Address, label owner), two checks (Address, label
    // owner) and the search outbox for each Org update, and the change feed's events for both
    // (migration 0025): the second of each pair planned for its 2,000 rows, none of them as two
    // transition tables compared row by row (the one-row plan, 279 ms here for the outbox when it was
    // cached).
    expect(plans).toHaveLength(16);
    const big = plans.filter((p) => /Named Tuplestore Scan[^\n]*rows=20\d\d/.test(p));
    expect(big).toHaveLength(8);
    expect(big.filter((p) => p.includes('insert into events'))).toHaveLength(2);
    const rowByRow =
      /Join Filter: [^\n]*\(n\.id = o\.id\)[^\n]*\n\s*-> {2}Named Tuplestore Scan[^\n]*\n(\s*Filter:[^\n]*\n)?\s*-> {2}Named Tuplestore Scan/;
    expect(plans.filter((p) => rowByRow.test(p))).toHaveLength(8);
    for (const plan of big) expect(plan).not.toMatch(rowByRow);
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

  it("looks up a new base's plain label when it ends in a number (it may be another base's clash label)", async () => {
    // Across transactions, as two imports would: ACME twice, then a company whose name slugifies to
    // 'acme-2' (its counter is new, but its plain label is ACME's second) and one more ACME.
    const recorded = async (bases: string[]) =>
      t.db.transaction().execute(async (trx) => {
        const slugs = await allocateSlugs(
          trx,
          'org',
          bases.map((base) => ({ base })),
        );
        for (const [i, slug] of slugs.entries())
          await trx
            .insertInto('orgs')
            .values({ domain_cc: 'gb', public_slug: slug, name: `CLASH ${bases[i]} ${i}`, content_hash: 'x' })
            .execute();
        return slugs;
      });
    expect(await recorded(['clash-co', 'clash-co'])).toEqual(['clash-co', 'clash-co-2']);
    expect(await recorded(['clash-co-2', 'clash-co'])).toEqual(['clash-co-2-2', 'clash-co-3']);
    // The counters: each base's last number handed out (an existing counter moved on, a new one made).
    const counters = await t.db
      .selectFrom('public_slug_counters')
      .select(['base', 'last'])
      .where('scope', '=', 'org')
      .where('base', 'in', ['clash-co', 'clash-co-2'])
      .orderBy('base')
      .execute();
    expect(counters).toEqual([
      { base: 'clash-co', last: 3 },
      { base: 'clash-co-2', last: 2 },
    ]);
  });

  it('gives a renamed Org its old label back, and keeps old labels from others', async () => {
    const id = await t.db.transaction().execute(async (trx) => {
      const [slug] = await allocateSlugs(trx, 'org', [{ base: 'harbour-light' }]);
      const row = await trx
        .insertInto('orgs')
        .values({ domain_cc: 'gb', public_slug: slug!, name: 'HARBOUR LIGHT', content_hash: 'x' })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    });
    // A rename as the importers make it: the label so far is kept as an alias, then replaced.
    const rename = (base: string) =>
      t.db.transaction().execute(async (trx) => {
        const [slug] = await allocateSlugs(trx, 'org', [{ base, ownerId: id }]);
        await keepFormerSlugs(trx, 'org', [{ ownerId: id, slug: slug! }]);
        await trx.updateTable('orgs').set({ public_slug: slug! }).where('id', '=', id).execute();
        return slug;
      });
    expect(await rename('quay-light')).toBe('quay-light');
    // The former label answers for the Org (labels table), the current one is its public_slug only.
    const labels = await t.db
      .selectFrom('org_public_domains')
      .select('slug')
      .where('org_id', '=', id)
      .execute();
    expect(labels.map((l) => l.slug)).toEqual(['harbour-light']);
    const [back, other] = await t.db
      .transaction()
      .execute((trx) =>
        allocateSlugs(trx, 'org', [{ base: 'harbour-light', ownerId: id }, { base: 'harbour-light' }]),
      );
    expect(back).toBe('harbour-light');
    expect(other).toBe('harbour-light-2');
    // Renamed back: the old label is its own again, and quay-light becomes the alias.
    expect(await rename('harbour-light')).toBe('harbour-light');
    const after = await t.db
      .selectFrom('org_public_domains')
      .select('slug')
      .where('org_id', '=', id)
      .orderBy('slug')
      .execute();
    expect(after.map((l) => l.slug)).toEqual(['harbour-light', 'quay-light']);
    // Neither label can be taken by another Org, as a current or as a former label.
    const other2 = await insertOrg('OTHER', 'other-label');
    await expect(
      t.db.updateTable('orgs').set({ public_slug: 'quay-light' }).where('id', '=', other2).execute(),
    ).rejects.toMatchObject({ code: '23505', constraint: 'org_public_domains_one_owner' });
    await expect(
      sql`insert into org_public_domains (slug, org_id) values ('harbour-light', ${other2})`.execute(t.db),
    ).rejects.toMatchObject({ code: '23505' });
    await expect(
      sql`insert into org_public_domains (slug, org_id) values ('other-label', ${id})`.execute(t.db),
    ).rejects.toMatchObject({ code: '23505', constraint: 'org_public_domains_one_owner' });
  });

  it('lets two concurrent allocators never pick the same label', async () => {
    const run = () =>
      t.db.transaction().execute(async (trx) => {
        const slugs = await allocateSlugs(
          trx,
          'org',
          Array.from({ length: 50 }, () => ({ base: 'same-name' })),
        );
        for (const slug of slugs) await insertOrgTrx(trx, slug);
        return slugs;
      });
    const [a, b] = await Promise.all([run(), run()]);
    expect(new Set([...a, ...b]).size).toBe(100);
  });
});

async function insertOrgTrx(trx: Parameters<typeof keepFormerSlugs>[0], slug: string): Promise<number> {
  const row = await trx
    .insertInto('orgs')
    .values({ domain_cc: 'gb', public_slug: slug, name: slug, content_hash: 'x' })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}
