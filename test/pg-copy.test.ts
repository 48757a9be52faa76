import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientOf, copyField, copyInto, copyLine } from '../shared/pg-copy.js';
import { createTestDb, type TestDb } from './support/db.js';

describe('COPY text format', () => {
  it.each([
    [null, '\\N'],
    ['plain', 'plain'],
    ['tab\there', 'tab\\there'],
    ['two\nlines\r\n', 'two\\nlines\\r\\n'],
    ['back\\slash \\N', 'back\\\\slash \\\\N'],
    [42, '42'],
    [-0.6149, '-0.6149'],
    [true, 'true'],
  ])('writes %j as %j', (value, expected) => {
    expect(copyField(value)).toBe(expected);
  });

  it('joins a row with tabs and ends it with a line break', () => {
    expect(copyLine(['a', null, 3])).toBe('a\t\\N\t3\n');
  });
});

describe('copyInto', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb();
    await sql`create table copy_probe (id int primary key, body text, doc jsonb, tags text[])`.execute(t.db);
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('reaches the client of the transaction it runs in', async () => {
    await t.db.transaction().execute(async (trx) => {
      const client = await clientOf(trx);
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
      expect((client as unknown as { processID: number }).processID).toBe(rows[0]!.pid);
    });
  });

  it('round-trips awkward text, JSON and arrays, and commits or rolls back with the transaction', async () => {
    const body = 'Chandlery, paint\tand rope \u2014 ask for "Big Dave".\nBack\\slash \\N';
    const lines = Array.from({ length: 1200 }, (_, i) =>
      copyLine([i, i === 0 ? body : null, '{"a":"q\\"uote"}', '{"x y","z\\\\\\"w"}']),
    );
    await t.db
      .transaction()
      .execute((trx) => copyInto(trx, 'copy_probe', ['id', 'body', 'doc', 'tags'], lines));
    const row = await sql<{ body: string; doc: unknown; tags: string[]; n: number }>`
      select body, doc, tags, (select count(*)::int from copy_probe) as n from copy_probe where id = 0`.execute(
      t.db,
    );
    expect(row.rows[0]).toEqual({ body, doc: { a: 'q"uote' }, tags: ['x y', 'z\\"w'], n: 1200 });

    await expect(
      t.db.transaction().execute(async (trx) => {
        await copyInto(trx, 'copy_probe', ['id'], [copyLine([5000])]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from copy_probe`.execute(t.db);
    expect(rows[0]!.n).toBe(1200);
  });

  it('fails the statement on a bad row, naming the problem', async () => {
    await expect(
      t.db
        .transaction()
        .execute((trx) => copyInto(trx, 'copy_probe', ['id', 'doc'], [copyLine([9, '{oops'])])),
    ).rejects.toThrow(/json/i);
  });
});
