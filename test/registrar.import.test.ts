import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { getRun } from '../ingest/import-runs/import-runs.repository.js';
import { createImportRun, partsOf } from '../ingest/import-runs/import-runs.state.js';
import { runImport } from '../ingest/run/run-import.js';
import { runPart } from '../ingest/run/run-part.js';
import { settleRun } from '../ingest/run/settle.js';
import type { Db } from '../shared/db.js';
import { createTestDb, type TestDb } from './support/db.js';
import { FEED_CONFIG, importFeed, permanentFailure, rejectsOf } from './support/import.js';
import {
  type RegistrarFields,
  registrarCsv,
  registrarFields,
  registrarLine,
} from './support/registrar-csv.js';
import { registerState } from './support/registrar-state.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-registrar-'));
const file = (name: string, content: string | Buffer) => {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
};

/** Versions and update times, to prove that a no-op import wrote nothing. */
async function stamps(db: Db) {
  const { rows } = await sql<{ n: string; v: number; u: Date; av: number; au: Date }>`
    select o.registration_number as n, o.version_number as v, o.updated as u, a.version_number as av, a.updated as au
    from orgs o join addresses a on a.id = o.registered_address_id order by 1`.execute(db);
  return rows.map((r) => ({ ...r, u: r.u.toISOString(), au: r.au.toISOString() }));
}

const FIXTURE = 'test/fixtures/registrar-small.csv';

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(async () => {
  await t?.drop();
});

async function clear(db: Db) {
  await sql`truncate orgs, addresses, org_public_domains, public_slug_counters, import_run_keys, import_rejects, import_runs restart identity cascade`.execute(
    db,
  );
}

/**
 * A `--full` run of one part whose staged rows are lost (a database crash empties the unlogged
 * staging table) between reading the part and settling the run.
 */
async function fullRunWithStageLost(source: string) {
  const run = await createImportRun(t.db, {
    feed: 'registrar',
    parts: [{ source, entry: null }],
    options: { country: 'GB', full: true },
  });
  const [part] = await partsOf(t.db, run);
  await runPart({ db: t.db, config: FEED_CONFIG }, part!.id);
  await sql`truncate ${sql.table(`import_stage_${run.id}`)}`.execute(t.db);
  return settleRun({ db: t.db, config: FEED_CONFIG }, run.id);
}

describe('registrar import', () => {
  beforeEach(async () => {
    await clear(t.db);
  });

  it('loads new companies at version 1 with their registered address, and quarantines bad rows', async () => {
    const run = await importFeed(t.db, 'registrar', FIXTURE);
    expect(run).toMatchObject({
      status: 'succeeded',
      rows_read: 10,
      inserted: 8,
      updated: 0,
      unchanged: 0,
      rejected: 2,
      warnings: 1,
      checkpoint_rows: 10,
    });
    const state = await registerState(t.db);
    expect(state).toHaveLength(8);
    expect(state.find((o) => o.registration_number === 'SC612345')).toMatchObject({
      name: 'GLEN ORRIN DISTILLERS LTD',
      informal_name: 'GLEN ORRIN DISTILLERS',
      public_slug: 'glen-orrin-distillers-ltd',
      slugs: ['glen-orrin-distillers-ltd'],
      sic_code: '11010',
      registration_date: '2016-03-14',
      domain_cc: 'gb',
      version_number: 1,
      line1: 'UNIT 4 GLEN ORRIN ESTATE',
      state: 'ROSS-SHIRE',
      country_code: 'GB',
      address_version: 1,
    });
    expect(state.find((o) => o.registration_number === 'FC031234')).toMatchObject({ country_code: 'DE' });
    expect(state.find((o) => o.registration_number === '12345680')).toMatchObject({
      registration_date: null,
    });
    const issues = await rejectsOf(t.db, run.id);
    expect(issues.map((i) => [i.severity, i.line_number, i.column_name, i.reason])).toEqual([
      ['warning', 9, 'IncorporationDate', 'impossible date "31/02/2019"'],
      ['rejected', 10, 'CompanyNumber', 'missing company number'],
      ['rejected', 11, null, 'wrong column count: expected 55 fields, found 4'],
    ]);
    expect(issues[2]!.raw).toBe('"SHORT ROW LIMITED","12345690","","LONDON"');
  });

  it('changes nothing when the same file (LF or CRLF) is imported again', async () => {
    await importFeed(t.db, 'registrar', FIXTURE);
    const before = await stamps(t.db);
    const again = await importFeed(t.db, 'registrar', FIXTURE);
    expect(again).toMatchObject({ inserted: 0, updated: 0, unchanged: 8, rejected: 2 });
    const crlf = await importFeed(t.db, 'registrar', 'test/fixtures/registrar-small-crlf.csv');
    expect(crlf).toMatchObject({ inserted: 0, updated: 0, unchanged: 8, rejected: 2 });
    expect(await stamps(t.db)).toEqual(before);
  });

  it('bumps exactly the Org and Address whose address changed', async () => {
    await importFeed(t.db, 'registrar', FIXTURE);
    const before = await stamps(t.db);
    const run = await importFeed(t.db, 'registrar', 'test/fixtures/registrar-small-changed-address.csv');
    expect(run).toMatchObject({ inserted: 0, updated: 1, unchanged: 7 });
    const after = await stamps(t.db);
    for (const row of after) {
      const old = before.find((b) => b.n === row.n)!;
      if (row.n === '07687209') {
        expect(row).toMatchObject({ v: 2, av: 2 });
        expect(row.u).not.toBe(old.u);
      } else expect(row).toEqual(old);
    }
  });

  it('gives an Org stored without a registered address (an older version wrote it) one on its next change', async () => {
    await importFeed(t.db, 'registrar', FIXTURE);
    await sql`update orgs set registered_address_id = null, content_hash = 'stale' where registration_number = '07687209'`.execute(
      t.db,
    );
    const run = await importFeed(t.db, 'registrar', 'test/fixtures/registrar-small-changed-address.csv');
    expect(run).toMatchObject({ inserted: 0, updated: 1, unchanged: 7 });
    const { rows } = await sql<{ line1: string | null; v: number; av: number }>`
      select a.line1, o.version_number as v, a.version_number as av
      from orgs o join addresses a on a.id = o.registered_address_id
      where o.registration_number = '07687209'`.execute(t.db);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ v: 2, av: 1 });
    expect(rows[0]!.line1).toBeTruthy();
  });

  it('bumps only the Org when only Org fields change, and keeps the old public domain after a rename', async () => {
    const one = (fields: RegistrarFields, name = 'ACME WIDGETS LTD') =>
      registrarCsv([registrarFields('07687209', name, fields)]);
    await importFeed(t.db, 'registrar', file('v1.csv', one({})));
    await importFeed(t.db, 'registrar', file('v2.csv', one({ CompanyStatus: 'Liquidation' })));
    let [row] = await registerState(t.db);
    expect(row).toMatchObject({ version_number: 2, address_version: 1, company_status: 'Liquidation' });
    await importFeed(
      t.db,
      'registrar',
      file('v3.csv', one({ CompanyStatus: 'Liquidation' }, 'ACME GADGETS LTD')),
    );
    [row] = await registerState(t.db);
    expect(row).toMatchObject({
      version_number: 3,
      public_slug: 'acme-gadgets-ltd',
      informal_name: 'ACME GADGETS',
      slugs: ['acme-gadgets-ltd', 'acme-widgets-ltd'],
    });
  });

  it('stores the name as registered, and an Org stored with collapsed spaces gets it on the next import', async () => {
    const registered = 'SHARPEREDGES  SHARPENING LTD';
    const source = file('spaces.csv', registrarCsv([registrarFields('13198105', registered)]));
    await importFeed(t.db, 'registrar', source);
    let [row] = await registerState(t.db);
    expect(row).toMatchObject({
      name: registered,
      public_slug: 'sharperedges-sharpening-ltd',
      version_number: 1,
    });
    // What an older version stored: the spaces collapsed, the hash of that name, no row fingerprint.
    await sql`update orgs set name = 'SHARPEREDGES SHARPENING LTD', content_hash = 'old', source_fingerprint = null`.execute(
      t.db,
    );
    const next = await importFeed(t.db, 'registrar', source);
    expect(next).toMatchObject({ updated: 1, unchanged: 0 });
    [row] = await registerState(t.db);
    expect(row).toMatchObject({
      name: registered,
      public_slug: 'sharperedges-sharpening-ltd',
      slugs: ['sharperedges-sharpening-ltd'],
      version_number: 2,
    });
  });

  it('lets the later row win for a company number repeated in one file, counted once', async () => {
    const rows = [
      registrarFields('00000001', 'FIRST LTD', { 'RegAddress.PostTown': 'OLD TOWN' }),
      registrarFields('00000002', 'SECOND LTD'),
      registrarFields('00000001', 'FIRST LTD', { 'RegAddress.PostTown': 'NEW TOWN' }),
      registrarFields('00000003', 'THIRD LTD'),
      registrarFields('00000003', 'THIRD RENAMED LTD'),
    ];
    // Batches of 2: one repeat falls inside a batch, the other across batches.
    const run = await importFeed(t.db, 'registrar', file('dups.csv', registrarCsv(rows)), { batchSize: 2 });
    expect(run).toMatchObject({ rows_read: 5, inserted: 3, updated: 0, duplicates: 2 });
    const state = await registerState(t.db);
    expect(
      state.map((o) => [o.registration_number, o.name, o.city, o.version_number, o.address_version]),
    ).toEqual([
      ['00000001', 'FIRST LTD', 'NEW TOWN', 1, 1],
      ['00000002', 'SECOND LTD', 'LONDON', 1, 1],
      ['00000003', 'THIRD RENAMED LTD', 'LONDON', 1, 1],
    ]);
  });

  it('a company twice in one file (different batches): the last row wins, and the same file again writes nothing', async () => {
    const rows = [
      registrarFields('00000001', 'FIRST LTD', {
        'RegAddress.PostTown': 'OLD TOWN',
        CompanyStatus: 'Dormant',
      }),
      registrarFields('00000002', 'SECOND LTD'),
      registrarFields('00000003', 'THIRD LTD'),
      registrarFields('00000001', 'FIRST RENAMED LTD', { 'RegAddress.PostTown': 'NEW TOWN' }),
    ];
    const source = file('dups-apart.csv', registrarCsv(rows));
    const first = await importFeed(t.db, 'registrar', source, { batchSize: 2 });
    expect(first).toMatchObject({ inserted: 3, updated: 0, duplicates: 1 });
    const before = await stamps(t.db);
    const state = await registerState(t.db);
    expect(state[0]).toMatchObject({
      registration_number: '00000001',
      name: 'FIRST RENAMED LTD',
      city: 'NEW TOWN',
      company_status: 'Active',
      version_number: 1,
      slugs: ['first-renamed-ltd'],
    });
    // The identical file, cut into other batches: nothing written, no version bumped.
    for (const batchSize of [2, 3, 1]) {
      const again = await importFeed(t.db, 'registrar', source, { batchSize });
      expect(again).toMatchObject({ inserted: 0, updated: 0, unchanged: 3, duplicates: 1 });
      expect(await stamps(t.db)).toEqual(before);
    }
    expect(await registerState(t.db)).toEqual(state);
  });

  it('recognises an unchanged row by its text (no split, no normalize) and keeps the fingerprint current', async () => {
    await importFeed(t.db, 'registrar', FIXTURE);
    const prints = async () =>
      (
        await sql<{ n: string; f: string | null }>`
          select registration_number as n, source_fingerprint as f from orgs order by 1`.execute(t.db)
      ).rows;
    const first = await prints();
    // Every row without warnings carries its fingerprint; the one with a warning does not (it is
    // normalized, and its warning reported, every time).
    expect(first.filter((r) => r.f === null).map((r) => r.n)).toEqual(['12345680']);
    // Proof that a recognised row is not read: an Org changed behind the importer's back (its hash
    // too) would be rewritten by a row that is normalized and compared; a recognised one is not.
    await sql`update orgs set informal_name = 'NOT READ', content_hash = 'tampered'
              where registration_number = 'SC612345'`.execute(t.db);
    const before = await stamps(t.db);
    const again = await importFeed(t.db, 'registrar', FIXTURE);
    expect(again).toMatchObject({ inserted: 0, updated: 0, unchanged: 8 });
    expect(await stamps(t.db)).toEqual(before);
    expect((await registerState(t.db)).find((o) => o.registration_number === 'SC612345')?.informal_name).toBe(
      'NOT READ',
    );
    // Other text, same content (a padded value is trimmed): unchanged, and the new text's fingerprint.
    const padded = file(
      'padded.csv',
      registrarCsv([registrarFields('00000077', 'PADDED LTD'), registrarFields('00000078', 'OTHER LTD')]),
    );
    await importFeed(t.db, 'registrar', padded);
    const one = await prints();
    await importFeed(
      t.db,
      'registrar',
      file(
        'padded2.csv',
        registrarCsv([
          registrarFields('00000077', 'PADDED LTD', { 'RegAddress.PostTown': 'LONDON ' }),
          registrarFields('00000078', 'OTHER LTD'),
        ]),
      ),
    );
    const two = await prints();
    const f = (rows: typeof one, n: string) => rows.find((r) => r.n === n)?.f;
    expect(f(two, '00000077')).not.toBe(f(one, '00000077'));
    expect(f(two, '00000078')).toBe(f(one, '00000078'));
    const state = await registerState(t.db);
    expect(state.find((o) => o.registration_number === '00000077')).toMatchObject({
      city: 'LONDON',
      version_number: 1,
    });
  });

  it('a part read while another run merged: its stale rows are read again, and the later run wins', async () => {
    const rows = (town: string) =>
      ['00000101', '00000102', '00000103'].map((n) =>
        registrarFields(n, `STALE ${n} LTD`, { 'RegAddress.PostTown': town }),
      );
    const original = file('stale-a.csv', registrarCsv(rows('LEEDS')));
    await importFeed(t.db, 'registrar', original);
    // Run S reads its part (every row recognised unchanged) ...
    const s = await createImportRun(t.db, {
      feed: 'registrar',
      parts: [{ source: original, entry: null }],
      options: { country: 'GB', full: false },
    });
    const [part] = await partsOf(t.db, s);
    await runPart({ db: t.db, config: FEED_CONFIG }, part!.id);
    // ... then run R changes the companies and finishes before S merges.
    await importFeed(t.db, 'registrar', file('stale-b.csv', registrarCsv(rows('YORK'))));
    const settled = await settleRun({ db: t.db, config: FEED_CONFIG }, s.id);
    expect(settled).toMatchObject({
      status: 'succeeded',
      rows_read: 3,
      updated: 3,
      unchanged: 0,
      duplicates: 0,
    });
    const state = await registerState(t.db);
    expect(
      state
        .filter((o) => String(o.registration_number).startsWith('000001'))
        .map((o) => [o.city, o.version_number]),
    ).toEqual([
      ['LEEDS', 3],
      ['LEEDS', 3],
      ['LEEDS', 3],
    ]);
  });

  it('staged rows lost before the merge (a database crash empties the staging table): the part is read again, --full marks nothing wrongly', async () => {
    const all = ['00000201', '00000202', '00000203'].map((n) => registrarFields(n, `LOST ${n} LTD`));
    await importFeed(t.db, 'registrar', file('lost-all.csv', registrarCsv(all)));
    const source = file('lost-part.csv', registrarCsv(all.slice(0, 2)));
    const settled = await fullRunWithStageLost(source);
    expect(settled).toMatchObject({ status: 'succeeded', rows_read: 2, unchanged: 2, closed: 1 });
    const state = await registerState(t.db);
    expect(state.map((o) => [o.registration_number, o.left_register_on !== null])).toEqual([
      ['00000201', false],
      ['00000202', false],
      ['00000203', true],
    ]);
  });

  it('--full marks companies missing from the file as left the register, and clears it when they return', async () => {
    const all = ['00000001', '00000002', '00000003'].map((n) => registrarFields(n, `COMPANY ${n} LTD`));
    await importFeed(t.db, 'registrar', file('all.csv', registrarCsv(all)));
    const partial = await importFeed(t.db, 'registrar', file('partial.csv', registrarCsv(all.slice(0, 1))), {
      full: true,
    });
    expect(partial).toMatchObject({ unchanged: 1, closed: 2 });
    let state = await registerState(t.db);
    expect(state.map((o) => [o.registration_number, o.left_register_on !== null, o.version_number])).toEqual([
      ['00000001', false, 1],
      ['00000002', true, 2],
      ['00000003', true, 2],
    ]);
    // A full run of the same partial file again closes nothing more.
    const repeat = await importFeed(t.db, 'registrar', file('partial.csv', registrarCsv(all.slice(0, 1))), {
      full: true,
    });
    expect(repeat).toMatchObject({ closed: 0, updated: 0 });
    const back = await importFeed(t.db, 'registrar', file('back.csv', registrarCsv(all.slice(0, 2))));
    expect(back).toMatchObject({ updated: 1, unchanged: 1, closed: 0 });
    state = await registerState(t.db);
    expect(state.map((o) => [o.registration_number, o.left_register_on !== null, o.version_number])).toEqual([
      ['00000001', false, 1],
      ['00000002', false, 3],
      ['00000003', true, 2],
    ]);
    expect(await t.db.selectFrom('orgs').select('id').execute()).toHaveLength(3);
    expect(
      (await sql<{ n: number }>`select count(*)::int as n from import_run_keys`.execute(t.db)).rows[0]!.n,
    ).toBe(0);
  });

  it('--full counts a rejected row whose company number is readable as present: its company is kept as stored', async () => {
    const company = (n: string, fields: RegistrarFields = {}) => registrarFields(n, `KEPT ${n} LTD`, fields);
    const numbers = ['00000301', '00000302', '00000303', '00000304', '00000305', 'SC000306'];
    await importFeed(t.db, 'registrar', file('kept-all.csv', registrarCsv(numbers.map((n) => company(n)))));
    const before = await registerState(t.db);
    const rows = [
      company('00000301'),
      // Rejected by normalization: no name (the new town must not be written either).
      company('00000302', { CompanyName: '', 'RegAddress.PostTown': 'YORK' }),
      // Rejected for its column count: the row stops after 10 fields.
      registrarLine(company('00000303', { 'RegAddress.PostTown': 'YORK' }))
        .split(',')
        .slice(0, 10)
        .join(','),
      // Rejected for malformed quoting after its number (a stray quote in an address line).
      registrarLine(company('00000304')).replace('"1 HIGH STREET"', '"1 "HIGH" STREET"'),
      // Rejected, its number written as the register rarely does: it normalizes like an accepted one.
      company('sc000306', { CompanyName: '' }),
      // Rejected without a number: it names no company. 00000305 is not in the file at all.
      company('', { CompanyName: 'NO NUMBER LTD' }),
    ];
    const run = await importFeed(t.db, 'registrar', file('kept-rejects.csv', registrarCsv(rows)), {
      full: true,
    });
    expect(run).toMatchObject({ status: 'succeeded', rows_read: 6, unchanged: 1, rejected: 5, closed: 1 });
    const after = await registerState(t.db);
    expect(after.filter((o) => o.left_register_on !== null).map((o) => o.registration_number)).toEqual([
      '00000305',
    ]);
    // The companies whose rows were rejected are exactly as they were: not gone, not changed.
    const others = (state: typeof before) => state.filter((o) => o.registration_number !== '00000305');
    expect(others(after)).toEqual(others(before));
    // The rejects are reported as before.
    const issues = await rejectsOf(t.db, run.id);
    expect(issues.map((i) => [i.severity, i.line_number, i.reason])).toEqual([
      ['rejected', 3, 'missing company name'],
      ['rejected', 4, 'wrong column count: expected 55 fields, found 10'],
      ['rejected', 5, expect.stringMatching(/^malformed quoting/)],
      ['rejected', 6, 'missing company name'],
      ['rejected', 7, 'missing company number'],
    ]);
  });

  it('--full across parts: a company whose only row is rejected in another part is not marked as gone', async () => {
    const numbers = ['00000401', '00000402', '00000403'];
    const all = numbers.map((n) => registrarFields(n, `PARTED ${n} LTD`));
    await importFeed(t.db, 'registrar', file('parted-all.csv', registrarCsv(all)));
    const before = await registerState(t.db);
    const run = await createImportRun(t.db, {
      feed: 'registrar',
      parts: [
        { source: file('parted-1.csv', registrarCsv([all[0]!])), entry: null },
        {
          source: file('parted-2.csv', registrarCsv([{ ...all[1]!, CompanyName: '' }])),
          entry: null,
        },
      ],
      options: { country: 'GB', full: true },
    });
    const settled = await runImport({ db: t.db, config: FEED_CONFIG }, run.id);
    expect(settled).toMatchObject({ status: 'succeeded', unchanged: 1, rejected: 1, closed: 1 });
    const after = await registerState(t.db);
    expect(after.map((o) => [o.registration_number, o.left_register_on !== null])).toEqual([
      ['00000401', false],
      ['00000402', false],
      ['00000403', true],
    ]);
    expect(after[1]).toEqual(before[1]);
  });

  it('--full still counts a rejected row as present when a database crash emptied the staging table', async () => {
    const all = ['00000601', '00000602', '00000603'].map((n) => registrarFields(n, `CRASH ${n} LTD`));
    await importFeed(t.db, 'registrar', file('crash-all.csv', registrarCsv(all)));
    const source = file('crash-part.csv', registrarCsv([all[0]!, { ...all[1]!, CompanyName: '' }]));
    const settled = await fullRunWithStageLost(source);
    expect(settled).toMatchObject({
      status: 'succeeded',
      rows_read: 2,
      unchanged: 1,
      rejected: 1,
      closed: 1,
    });
    const state = await registerState(t.db);
    expect(state.map((o) => [o.registration_number, o.left_register_on !== null])).toEqual([
      ['00000601', false],
      ['00000602', false],
      ['00000603', true],
    ]);
  });

  it('--full fails on a file that ends inside a quoted field (cut mid-row) and marks nothing as gone', async () => {
    const all = ['00000501', '00000502', '00000503', '00000504'].map((n) =>
      registrarFields(n, `CUT ${n} LTD`),
    );
    await importFeed(t.db, 'registrar', file('cut-all.csv', registrarCsv(all)));
    const before = await registerState(t.db);
    // Cut in the middle of the third row's address line: 00000503's row is broken, 00000504 is lost.
    const text = registrarCsv(all.slice(0, 3));
    const cut = file('cut.csv', text.slice(0, text.lastIndexOf('"1 HIGH STREET"') + 5));
    expect(await permanentFailure(importFeed(t.db, 'registrar', cut, { full: true }))).toMatch(
      /line 4: the file ends inside a quoted field/,
    );
    const run = await t.db
      .selectFrom('import_runs')
      .selectAll()
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(run).toMatchObject({ status: 'failed', closed: 0 });
    expect(await registerState(t.db)).toEqual(before);
    // Without --full the same file loads as it always did: the cut row is rejected, nothing is marked.
    const plain = await importFeed(t.db, 'registrar', cut);
    expect(plain).toMatchObject({ status: 'succeeded', unchanged: 2, rejected: 1, closed: 0 });
    expect(await registerState(t.db)).toEqual(before);
  });

  it('refuses a --full file without a single valid row', async () => {
    await importFeed(t.db, 'registrar', FIXTURE);
    const before = await registerState(t.db);
    const onlyBad = file('bad-only.csv', registrarCsv([registrarFields('', 'NO NUMBER LTD')]));
    await expect(importFeed(t.db, 'registrar', onlyBad, { full: true })).rejects.toThrow(
      /at least one valid row/,
    );
    expect(await registerState(t.db)).toEqual(before);
  });

  it('--full refuses to mark more of the register as gone than --max-gone (a file cut at a line end looks whole)', async () => {
    const all = Array.from({ length: 1_500 }, (_, i) =>
      registrarFields(String(700_000 + i).padStart(8, '0'), `GUARD ${i} LTD`),
    );
    await importFeed(t.db, 'registrar', file('guard-all.csv', registrarCsv(all)));
    const before = await registerState(t.db);
    // The first 300 rows, ending at a line end: nothing in the file says it is cut.
    const cut = file('guard-cut.csv', registrarCsv(all.slice(0, 300)));
    expect(await permanentFailure(importFeed(t.db, 'registrar', cut, { full: true }))).toBe(
      "--full would mark 1,200 of the register's 1,500 open companies (80%) as gone, more than --max-gone 10%: " +
        'is a part missing, or a file cut short? Nothing was marked as gone (the rows read are loaded). ' +
        'If they really are gone, import again with --max-gone 81%',
    );
    const run = await t.db
      .selectFrom('import_runs')
      .select(['id', 'status', 'closed'])
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(run).toMatchObject({ status: 'failed', closed: 0 });
    expect(await registerState(t.db)).toEqual(before);
    // The failed run leaves no staging table behind.
    const { rows } = await sql<{ n: string }>`
      select count(*) as n from pg_tables where tablename = ${`import_stage_${run.id}`}`.execute(t.db);
    expect(Number(rows[0]!.n)).toBe(0);

    // Allowed, the same file marks them.
    const allowed = await importFeed(t.db, 'registrar', cut, { full: true, maxGone: '81%' });
    expect(allowed).toMatchObject({ status: 'succeeded', closed: 1_200 });
    const gone = await t.db
      .selectFrom('orgs')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('left_register_on', 'is not', null)
      .executeTakeFirstOrThrow();
    expect(Number(gone.n)).toBe(1_200);
  });

  it('takes --max-gone only as a percentage, and only with --full', async () => {
    const cut = file('guard-one.csv', registrarCsv([registrarFields('00000001', 'ONE LTD')]));
    for (const bad of ['0', '101', 'ten', '10%%', '-5', '1e1'])
      await expect(importFeed(t.db, 'registrar', cut, { full: true, maxGone: bad })).rejects.toThrow(
        `--max-gone must be a percentage above 0 and at most 100, such as 10%, not "${bad}"`,
      );
    await expect(importFeed(t.db, 'registrar', cut, { maxGone: '20' })).rejects.toThrow(
      '--max-gone applies to --full imports only',
    );
    expect(await importFeed(t.db, 'registrar', cut, { full: true, maxGone: ' 2.5 % ' })).toMatchObject({
      status: 'succeeded',
    });
  });

  it('rejects the rows of a Windows-1252 file that are not UTF-8, each with its line, and keeps the names stored from UTF-8', async () => {
    const rows = [
      registrarFields('00000101', 'CAF\u00c9 QUAYSIDE HARDWARE LTD'),
      registrarFields('00000102', 'HARBOUR LIGHT ANALYTICS LIMITED'),
      registrarFields('00000103', 'M\u00dcLLER \u2019S BAKERY LTD', { 'RegAddress.PostTown': 'K\u00d6LN' }),
    ];
    const utf8 = file('utf8.csv', registrarCsv(rows, '\r\n'));
    expect(await importFeed(t.db, 'registrar', utf8)).toMatchObject({ inserted: 3, rejected: 0 });
    const before = await registerState(t.db);
    // The same register saved by Excel as "CSV" (Windows-1252): É is the byte C9, ’ the byte 92.
    const cp1252 = Buffer.from(registrarCsv(rows, '\r\n').replaceAll('\u2019', '\u0092'), 'latin1');
    const run = await importFeed(t.db, 'registrar', file('cp1252.csv', cp1252));
    expect(run).toMatchObject({ status: 'succeeded', rows_read: 3, unchanged: 1, updated: 0, rejected: 2 });
    const issues = await rejectsOf(t.db, run.id);
    const reason = 'not valid UTF-8 text (the file may be Windows-1252 or Latin-1: save it as UTF-8)';
    expect(issues.map((i) => [i.severity, i.line_number, i.column_name, i.reason])).toEqual([
      ['rejected', 2, null, reason],
      ['rejected', 4, null, reason],
    ]);
    expect(issues[0]!.raw).toMatch(/^"CAF\uFFFD QUAYSIDE HARDWARE LTD","00000101",/);
    expect(await registerState(t.db)).toEqual(before);
  });

  it.each([
    ['a file of another format', 'test/fixtures/not-register.csv', /missing columns CompanyName/],
    ['an empty file', 'EMPTY', /empty/],
    ['a binary file', 'BINARY', /not CSV/],
    ['a missing file', '/nonexistent/registrar.csv', /file not found/],
    ['a header without data rows', 'HEADER_ONLY', /^the file has a header but no data rows$/],
    ['a file whose lines end in CR only', 'CR_ONLY', /^lines end in CR only \(old Mac format\)/],
  ])('fails the run on %s and changes no record', async (_what, source, reason) => {
    await importFeed(t.db, 'registrar', FIXTURE);
    const before = await registerState(t.db);
    const made: Record<string, () => string> = {
      EMPTY: () => file('empty.csv', ''),
      BINARY: () =>
        file('binary.csv', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x00, 0x0d, 0x0a, 0xff, 0xfe, 0x00])),
      HEADER_ONLY: () => file('header-only.csv', registrarCsv([], '\r\n')),
      CR_ONLY: () => file('old-mac.csv', readFileSync(FIXTURE, 'utf8').replaceAll('\n', '\r')),
    };
    const location = made[source]?.() ?? source;
    expect(await permanentFailure(importFeed(t.db, 'registrar', location))).toMatch(reason);
    const run = await t.db
      .selectFrom('import_runs')
      .selectAll()
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(reason);
    expect(await registerState(t.db)).toEqual(before);
  });

  it('resumes an interrupted run from its checkpoint and ends exactly as one clean run', async () => {
    const rows = Array.from({ length: 23 }, (_, i) =>
      registrarFields(
        String(1000 + i).padStart(8, '0'),
        `COMPANY ${i} LTD`,
        i === 5 ? { IncorporationDate: '31/02/2019' } : {},
      ),
    );
    rows.splice(10, 0, registrarFields('', 'NO NUMBER LTD'));
    rows.push(registrarFields('00001003', 'COMPANY 3 RENAMED LTD'));
    const source = file('resume.csv', registrarCsv(rows));

    const clean = await createTestDb();
    try {
      const reference = await importFeed(clean.db, 'registrar', source, { batchSize: 4 });
      // The same file, but the process "dies" after the third committed batch.
      const created = await createImportRun(t.db, {
        feed: 'registrar',
        parts: [{ source, entry: null }],
        options: { country: 'GB', full: false },
      });
      let batches = 0;
      const crash = async () => {
        if (++batches === 3) throw new Error('worker died');
      };
      await expect(
        runImport({ db: t.db, config: FEED_CONFIG, batchSize: 4, onProgress: crash }, created.id),
      ).rejects.toThrow(/worker died/);
      const half = await getRun(t.db, created.id);
      expect(half).toMatchObject({ status: 'running', checkpoint_rows: 12 });
      // The retry may cut batches differently; the result must not depend on it.
      const resumed = await runImport({ db: t.db, config: FEED_CONFIG, batchSize: 5 }, created.id);
      const counts = (r: typeof reference) => [
        r.rows_read,
        r.inserted,
        r.updated,
        r.unchanged,
        r.rejected,
        r.warnings,
        r.duplicates,
      ];
      expect(counts(resumed)).toEqual(counts(reference));
      expect(counts(resumed)).toEqual([25, 23, 0, 0, 1, 1, 1]);
      expect(await registerState(t.db)).toEqual(await registerState(clean.db));
      const rejects = (db: Db) =>
        db
          .selectFrom('import_rejects')
          .select(['severity', 'line_number', 'reason'])
          .orderBy('line_number')
          .execute();
      expect(await rejects(t.db)).toEqual(await rejects(clean.db));
    } finally {
      await clean.drop();
    }
  });

  it('runs two imports of the same register one after the other, never interleaved', async () => {
    const numbers = Array.from({ length: 300 }, (_, i) => String(i + 1).padStart(8, '0'));
    const a = file('a.csv', registrarCsv(numbers.map((n) => registrarFields(n, `CO ${n} LTD`))));
    const b = file(
      'b.csv',
      registrarCsv(numbers.map((n) => registrarFields(n, `CO ${n} LTD`, { 'RegAddress.PostTown': 'YORK' }))),
    );
    const [ra, rb] = await Promise.all([
      importFeed(t.db, 'registrar', a, { batchSize: 50 }),
      importFeed(t.db, 'registrar', b, { batchSize: 50 }),
    ]);
    // Whichever went first inserted everything; the other changed every address once.
    expect(ra.inserted + rb.inserted).toBe(300);
    expect(ra.updated + rb.updated).toBe(300);
    const versions = await sql<{ v: number; n: number }>`
      select version_number as v, count(*)::int as n from orgs group by 1`.execute(t.db);
    expect(versions.rows).toEqual([{ v: 2, n: 300 }]);
  });
});
