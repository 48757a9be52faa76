import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCsv } from '../ingest/csv.js';
import { createTestDb, type TestDb } from './support/db.js';
import { importFeed, rejectsOf } from './support/import.js';
import { registrarCsv, registrarFields, registrarLine } from './support/registrar-csv.js';

/**
 * A NUL byte in a feed row (Postgres text cannot hold one), or a key too long for its index, used to
 * fail the whole batch, and with it the run. Each is a rejected row with a reason; the others load.
 */
const dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-nul-'));
const file = (name: string, content: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
};

const REASON = 'contains a NUL (0x00) character, shown as ␀';

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(async () => {
  await t?.drop();
});

describe('feed rows Postgres cannot store', () => {
  it('registrar: the row is rejected with its reason and raw text, the others load', async () => {
    const nulRow = registrarLine(registrarFields('00000002', 'NUL\u0000 TRADING LTD'));
    const csv = registrarCsv([
      registrarFields('00000001', 'BEFORE LTD'),
      nulRow,
      registrarFields('00000003', 'AFTER LTD', { 'RegAddress.AddressLine2': 'UNIT\u00002' }),
      registrarFields('00000004', 'LAST LTD'),
    ]);
    const run = await importFeed(t.db, 'registrar', file('registrar.csv', csv), { batchSize: 2 });
    expect(run).toMatchObject({ status: 'succeeded', rows_read: 4, inserted: 2, rejected: 2 });
    const issues = await rejectsOf(t.db, run.id);
    expect(issues.map((i) => [i.severity, i.line_number, i.column_name, i.reason])).toEqual([
      ['rejected', 3, null, REASON],
      ['rejected', 4, null, REASON],
    ]);
    expect(issues[0]!.raw).toBe(nulRow.replace('\u0000', '␀'));
    const names = await t.db.selectFrom('orgs').select('name').orderBy('name').execute();
    expect(names.map((o) => o.name)).toEqual(['BEFORE LTD', 'LAST LTD']);
  });

  it('locations: the row is rejected with its reason, the others load', async () => {
    const sheet = [
      'Store code,Business name,Address line 1,Locality,Country / Region,Monday hours',
      'S1,Nul Trading,1 High Street,London,GB,09:00-17:00',
      'S2,Nul Trading,2 High\u0000 Street,London,GB,09:00-17:00',
      '"S3","Nul Trading","3 High Street","Lon\u0000don","GB","09:00-17:00"',
      'S4,Nul Trading,4 High Street,London,GB,09:00-17:00',
    ].join('\n');
    const run = await importFeed(t.db, 'locations', file('locations.csv', `${sheet}\n`));
    expect(run).toMatchObject({ status: 'succeeded', rows_read: 4, inserted: 2, rejected: 2 });
    const issues = await rejectsOf(t.db, run.id);
    expect(issues.map((i) => [i.line_number, i.reason, i.raw])).toEqual([
      [3, REASON, 'S2,Nul Trading,2 High␀ Street,London,GB,09:00-17:00'],
      [4, REASON, '"S3","Nul Trading","3 High Street","Lon␀don","GB","09:00-17:00"'],
    ]);
    const codes = await t.db.selectFrom('locations').select('code').orderBy('code').execute();
    expect(codes.map((l) => l.code)).toEqual(['S1', 'S4']);
  });

  it('locations: a store code or business name too long for its index is a rejected row', async () => {
    // Random text, which Postgres cannot compress below its index entry limit.
    const random = (n: number) => randomBytes(n).toString('base64url').slice(0, n);
    const sheet = [
      'Store code,Business name,Address line 1,Locality,Country / Region',
      `${random(201)},Long Keys Ltd,1 High Street,Leeds,GB`,
      `L2,${random(501)},2 High Street,Leeds,GB`,
      `${random(200)},Long Keys Ltd,3 High Street,Leeds,GB`,
    ].join('\n');
    const run = await importFeed(t.db, 'locations', file('long.csv', `${sheet}\n`));
    expect(run).toMatchObject({ status: 'succeeded', rows_read: 3, inserted: 1, rejected: 2 });
    const issues = await rejectsOf(t.db, run.id);
    expect(issues.map((i) => [i.line_number, i.column_name, i.reason])).toEqual([
      [2, 'Store code', 'store code is longer than 200 characters'],
      [3, 'Business name', 'business name is longer than 500 characters'],
    ]);
  });

  it('CSV reading: the record keeps its line, later lines keep theirs, a NUL header is not CSV', async () => {
    const text = 'a,b\n1,2\n"3\n\u0000",4\n5,6\n';
    const csv = await openCsv(Readable.from([Buffer.from(text)]));
    const records = [];
    for await (const batch of csv.batches) records.push(...batch);
    expect(records.map((r) => [r.line, r.error ?? null, r.fields])).toEqual([
      [2, null, ['1', '2']],
      [3, REASON, []],
      [5, null, ['5', '6']],
    ]);
    await expect(openCsv(Readable.from([Buffer.from('a\u0000,b\n1,2\n')]))).rejects.toThrow(
      'the file is not CSV text',
    );
  });
});
