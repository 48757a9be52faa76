import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, importOneOrg, newAccount, startTestApi } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_PG_ADMIN_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';

/**
 * The API's in-memory cache of rendered records (api/records/record-cache.ts): never staler than
 * Postgres, whatever writes the rows, and reads stay right while its listening connection is away.
 */

let t: TestDb;
let app: FastifyInstance;
let orgPath: string;
let key: string;
const redisNs = testQueuePrefix();

beforeAll(async () => {
  t = await createTestDb();
  orgPath = `/v1/org/${await importOneOrg(t.db, 'CACHED NAME LTD', '07654321')}`;
  app = await startTestApi({ databaseUrl: t.url, prefix: redisNs.prefix });
  key = (await newAccount(t.db, 10_000)).api_key;
});
afterAll(async () => {
  await app?.close();
  await t?.drop();
  await redisNs.cleanup();
});

const orgName = async () => {
  const res = await get(app, orgPath, key);
  expect(res.status).toBe(200);
  return { name: (res.body.org as { name: string }).name, etag: res.headers.etag };
};

describe('record cache', () => {
  it('a write committed before a request is always in its answer (40 writes, each read at once)', async () => {
    let previous = await orgName();
    for (let i = 0; i < 40; i++) {
      await orgName(); // cached now
      await sql`update orgs set name = ${`CACHED NAME ${i} LTD`} where registration_number = '07654321'`.execute(
        t.db,
      );
      const now = await orgName();
      expect(now.name).toBe(`CACHED NAME ${i} LTD`);
      expect(now.etag).not.toBe(previous.etag);
      previous = now;
    }
  });

  it('serves a hit without reading Postgres (a write that skips the triggers is not seen)', async () => {
    const cached = await orgName();
    // session_replication_role = replica turns triggers off, so this write sends no notification:
    // only a cache that did not read Postgres can still answer the old name.
    await t.db.transaction().execute(async (trx) => {
      await sql`set local session_replication_role = replica`.execute(trx);
      await sql`update orgs set name = 'UNNOTIFIED LTD' where registration_number = '07654321'`.execute(trx);
    });
    expect(await orgName()).toEqual(cached);
    // The next notified write of any of the tables drops it.
    await sql`update orgs set name = name where registration_number = '07654321'`.execute(t.db);
    expect((await orgName()).name).toBe('UNNOTIFIED LTD');
  });

  it('a change to a joined table (the registered address) is seen too', async () => {
    const before = await get(app, orgPath, key);
    await sql`update addresses set city = 'NEWTOWN' where id =
      (select registered_address_id from orgs where registration_number = '07654321')`.execute(t.db);
    const after = await get(app, orgPath, key);
    expect(
      (after.body.org as { registration: { address: { city: string } } }).registration.address.city,
    ).toBe('NEWTOWN');
    expect(after.headers.etag).not.toBe(before.headers.etag);
  });

  it('keeps answering right while its listening connection is killed, and caches again after', async () => {
    const admin = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
    await admin.connect();
    try {
      const killed = await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
         where application_name = 'bizdir-api-cache' and datname = $1`,
        [t.name],
      );
      expect(killed.rowCount).toBeGreaterThan(0);
    } finally {
      await admin.end();
    }
    for (let i = 0; i < 5; i++) {
      await sql`update orgs set name = ${`AWAY ${i} LTD`} where registration_number = '07654321'`.execute(
        t.db,
      );
      expect((await orgName()).name).toBe(`AWAY ${i} LTD`);
    }
    // It reconnects within a second or two; then writes are still seen at once.
    await new Promise((r) => setTimeout(r, 2_500));
    for (let i = 0; i < 5; i++) {
      await orgName();
      await sql`update orgs set name = ${`BACK ${i} LTD`} where registration_number = '07654321'`.execute(
        t.db,
      );
      expect((await orgName()).name).toBe(`BACK ${i} LTD`);
    }
  });
});
