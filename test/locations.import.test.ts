import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImportRun } from '../ingest/import-runs/import-runs.repository.js';
import { ImportFailedError } from '../ingest/run/errors.js';
import { uidOf } from '../shared/org-domains.read-model.js';
import { createTestDb, type TestDb } from './support/db.js';
import { FEED_CONFIG, importFeed, permanentFailure, rejectsOf } from './support/import.js';

/**
 * The location feed end to end, against a real database: the sample sheet, then re-imports,
 * changes, partial sheets, `--full`, Org linking and bad input. The tests build on each other in
 * order (one database per file), the way an operator's imports follow each other.
 */

let t: TestDb;
const SAMPLE = 'samples/locations-sample.csv';

beforeAll(async () => {
  t = await createTestDb();
  // Company-number links need the register: the sample register holds GLEN ORRIN and ACME.
  await importFeed(t.db, 'registrar', 'samples/registrar-sample.csv');
});
afterAll(async () => {
  await t?.drop();
});

interface LocationRow {
  id: number;
  uid: string;
  code: string;
  org_id: number;
  org_name: string;
  registration_number: string | null;
  public_slug: string;
  is_default: boolean;
  closed_date: string | null;
  version_number: number;
  updated: Date;
  address_version: number;
  [column: string]: unknown;
}

async function locations(): Promise<Map<string, LocationRow>> {
  const { rows } = await sql<LocationRow>`
    select l.*, o.name as org_name, o.registration_number, o.domain_cc as org_cc, o.public_slug as org_slug,
      a.line1, a.line2, a.line3, a.city, a.sublocality, a.state, a.state_code, a.zip, a.country_code,
      a.version_number as address_version, a.updated as address_updated
    from locations l join orgs o on o.id = l.org_id join addresses a on a.id = l.address_id`.execute(t.db);
  return new Map(rows.map((r) => [r.code, r]));
}

describe('importing the sample sheet', () => {
  let run: ImportRun;
  let rows: Map<string, LocationRow>;
  beforeAll(async () => {
    run = await importFeed(t.db, 'locations', SAMPLE);
    rows = await locations();
  });

  it('loads the good rows and counts the refused ones', () => {
    expect(run).toMatchObject({ status: 'succeeded', rows_read: 13, inserted: 11, updated: 0, rejected: 2 });
    expect(rows.size).toBe(11);
  });

  it('stores refused rows with line number, column, reason and raw text', async () => {
    const issues = await rejectsOf(t.db, run.id);
    expect(issues).toEqual([
      expect.objectContaining({
        severity: 'rejected',
        line_number: 15,
        column_name: 'Business name',
        reason: 'business name is empty',
        raw: expect.stringMatching(/^NB-2,,7 Quay Street,/),
      }),
      expect.objectContaining({
        severity: 'rejected',
        line_number: 16,
        column_name: 'Monday hours',
        reason: expect.stringContaining('"9 till late"'),
      }),
    ]);
  });

  it('links rows by company number (padded) to registered Orgs', () => {
    expect(rows.get('GO-VC')).toMatchObject({
      registration_number: 'SC612345',
      org_name: 'GLEN ORRIN DISTILLERS LTD',
    });
    expect(rows.get('GO-INV')!.org_id).toBe(rows.get('GO-VC')!.org_id);
    expect(rows.get('0042')).toMatchObject({ registration_number: '07687209' });
  });

  it('finds or creates non-registered Orgs by business name and country', async () => {
    const qh = rows.get('QH-001')!;
    expect(rows.get('QH-002')!.org_id).toBe(qh.org_id);
    expect(rows.get('QH-003')!.org_id).toBe(qh.org_id);
    const org = await t.db
      .selectFrom('orgs')
      .selectAll()
      .where('id', '=', qh.org_id)
      .executeTakeFirstOrThrow();
    expect(org).toMatchObject({
      name: 'Quayside Hardware',
      informal_name: 'Quayside Hardware',
      domain_cc: 'gb',
      public_slug: 'quayside-hardware',
      registration_number: null,
    });
    // A new Org's label is its public_slug; the labels table holds only labels held before a rename.
    const alias = await t.db
      .selectFrom('org_public_domains')
      .selectAll()
      .where('org_id', '=', qh.org_id)
      .execute();
    expect(alias).toEqual([]);
    expect(rows.get('TX-AUS-01')).toMatchObject({ org_cc: 'us', org_slug: 'lone-star-tacos' });
    expect(rows.get('TX-HOU-01')!.org_id).toBe(rows.get('TX-AUS-01')!.org_id);
  });

  it('gives each Location stable and public domains', async () => {
    expect(rows.get('QH-001')).toMatchObject({ domain_cc: 'gb', public_slug: 'quayside-hardware-whitby' });
    expect(rows.get('GO-VC')!.public_slug).toBe('glen-orrin-distillers-muir-of-ord');
    expect(rows.get('CZ-1')).toMatchObject({ domain_cc: 'fr', public_slug: 'cafe-zoe-son-paris' });
    expect(rows.get('QH-001')!.uid).toMatch(/^[a-z0-9]{8}$/);
    // Each Location's label is its public_slug, unique; no Location has been renamed yet.
    const held = await t.db.selectFrom('location_public_domains').select(['slug', 'location_id']).execute();
    expect(held).toEqual([]);
    expect(new Set([...rows.values()].map((r) => r.public_slug)).size).toBe(rows.size);
  });

  it('stores hours in the API shape: closed days, split, 12-hour, past midnight, 24 hours, special', () => {
    const qh = rows.get('QH-001')!.hours as { normal: unknown[]; special: unknown[] };
    expect(qh.normal[0]).toEqual({ day: 0, open: false, open_time: '00:00', close_time: '00:00' });
    expect(qh.normal.slice(-2)).toEqual([
      { day: 6, open: true, open_time: '09:00', close_time: '12:30' },
      { day: 6, open: true, open_time: '13:30', close_time: '16:00' },
    ]);
    expect(qh.special).toEqual([
      { date: '2026-12-24', open: true, open_time: '08:30', close_time: '13:00' },
      { date: '2026-12-25', open: false, open_time: '00:00', close_time: '00:00' },
      { date: '2026-12-26', open: false, open_time: '00:00', close_time: '00:00' },
    ]);
    const tacos = rows.get('TX-AUS-01')!.hours as { normal: unknown[]; special: unknown[] };
    expect(tacos.normal[0]).toEqual({ day: 0, open: true, open_time: '10:00', close_time: '16:00' });
    expect(tacos.normal[1]).toEqual({ day: 1, open: true, open_time: '06:00', close_time: '23:00' });
    expect(tacos.normal[6]).toEqual({ day: 6, open: true, open_time: '06:00', close_time: '02:00' });
    const bar = rows.get('NB-1')!.hours as { normal: unknown[] };
    expect(bar.normal[0]).toEqual({ day: 0, open: true, open_time: '18:00', close_time: '02:00' });
    expect(bar.normal[6]).toEqual({ day: 6, open: true, open_time: '00:00', close_time: '24:00' });
    // No hours given on Sunday: no entry for that day (not a closed one).
    const acme = rows.get('0042')!.hours as { normal: { day: number }[] };
    expect(acme.normal.map((e) => e.day)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('stores phones, links, description, year and the address with state codes', () => {
    const qh3 = rows.get('QH-003')!;
    expect(qh3.phones).toMatchObject({ default: '01262 600300', alt: '01262 600301', local: '07700 900301' });
    expect(qh3.description).toBe('Our newest shop.\nChandlery, paint and rope — ask for "Big Dave".');
    expect(qh3).toMatchObject({
      year_established: 2024,
      line1: 'Unit 7, Marina Yard',
      line2: 'Harbour Road',
    });
    expect(rows.get('QH-001')!.links).toMatchObject({
      website_url: 'https://quayside.example.co.uk/whitby',
      socialnet_url: 'https://socialnet.example/quaysidehardware',
      photoshare_url: null,
    });
    expect(rows.get('GO-VC')!.links).toMatchObject({
      website_url: 'https://glenorrin.example.com/visit',
      photoshare_url: 'https://photoshare.example/glenorrin',
    });
    expect(rows.get('TX-AUS-01')).toMatchObject({
      state: 'Texas',
      state_code: 'TX',
      zip: '78701',
      country_code: 'US',
    });
    expect(rows.get('TX-HOU-01')).toMatchObject({ state: 'Texas', state_code: 'TX' });
    expect(rows.get('D-01')).toMatchObject({
      state: 'Co. Dublin',
      state_code: null,
      sublocality: 'Temple Bar',
    });
    expect(rows.get('D-01')!.description).toBe(
      'Second-hand and new books on the quays.\nReadings every Thursday, "open mic" on Fridays.',
    );
    expect(rows.get('CZ-1')).toMatchObject({
      name: 'Café Zoë & Søn',
      description: 'Crème brûlée, naturellement.',
    });
    expect(rows.get('0042')).toMatchObject({ code: '0042', zip: 'LS1 4AP' });
  });

  it('makes the first open Location of each Org its one default', () => {
    const defaults = [...rows.values()].filter((r) => r.is_default).map((r) => r.code);
    expect(defaults.sort()).toEqual(['0042', 'CZ-1', 'D-01', 'GO-VC', 'NB-1', 'QH-001', 'TX-AUS-01']);
  });
});

describe('importing again', () => {
  it('changes nothing when the sheet is unchanged', async () => {
    const before = await locations();
    const run = await importFeed(t.db, 'locations', SAMPLE);
    expect(run).toMatchObject({ inserted: 0, updated: 0, unchanged: 11, rejected: 2 });
    const after = await locations();
    for (const [code, row] of before) {
      expect(after.get(code)).toMatchObject({ version_number: 1, address_version: 1, uid: row.uid });
      expect(after.get(code)!.updated).toEqual(row.updated);
    }
  });

  it('bumps only the changed row by exactly one (en-GB template; its missing link columns keep links)', async () => {
    const before = await locations();
    const run = await importFeed(t.db, 'locations', 'test/fixtures/locations-en-gb-changed.csv');
    expect(run).toMatchObject({ inserted: 0, updated: 1, unchanged: 2, rejected: 0 });
    const after = await locations();
    expect(after.get('QH-002')).toMatchObject({ version_number: 2, address_version: 1 });
    expect(after.get('QH-002')!.updated.getTime()).toBeGreaterThan(before.get('QH-002')!.updated.getTime());
    expect((after.get('QH-002')!.hours as { normal: unknown[] }).normal[6]).toEqual({
      day: 6,
      open: true,
      open_time: '09:00',
      close_time: '17:00',
    });
    expect(after.get('QH-001')).toMatchObject({ version_number: 1 });
    expect(after.get('QH-001')!.links).toMatchObject({
      socialnet_url: 'https://socialnet.example/quaysidehardware',
    });
  });

  it('applies a partial sheet: absent columns stay, a present empty one clears', async () => {
    const run = await importFeed(t.db, 'locations', 'test/fixtures/locations-partial.csv');
    expect(run).toMatchObject({ updated: 1, rejected: 0 });
    const qh = (await locations()).get('QH-001')!;
    expect(qh).toMatchObject({ version_number: 2, address_version: 1, city: 'Whitby', zip: 'YO21 3PU' });
    expect(qh.links).toMatchObject({
      website_url: null,
      socialnet_url: 'https://socialnet.example/quaysidehardware',
    });
    expect(qh.phones).toMatchObject({ default: '+44 1947 600123' });
    const hours = qh.hours as { normal: { day: number }[]; special: unknown[] };
    expect(hours.normal.filter((e) => e.day === 1)).toEqual([
      { day: 1, open: true, open_time: '10:00', close_time: '16:00' },
    ]);
    expect(hours.normal.filter((e) => e.day === 2)).toEqual([
      { day: 2, open: true, open_time: '08:30', close_time: '17:30' },
    ]);
    expect(hours.special).toHaveLength(3);
  });

  it('changes an address: the Address and its Location each bump once', async () => {
    const csv =
      'Store code,Business name,Address line 1,Country / Region,Postal code\nD-01,Liffey Books,3 Ormond Quay Upper,IE,D07 X2Y4\n';
    const run = await importFeed(t.db, 'locations', await tempSheet(csv));
    expect(run).toMatchObject({ updated: 1 });
    expect((await locations()).get('D-01')).toMatchObject({
      version_number: 2,
      address_version: 2,
      zip: 'D07 X2Y4',
    });
  });
});

describe('--full', () => {
  it('closes the Org\u2019s Locations missing from the sheet, but not one whose row was refused', async () => {
    const before = await locations();
    const run = await importFeed(t.db, 'locations', 'test/fixtures/locations-quayside-full.csv', {
      full: true,
    });
    expect(run).toMatchObject({ status: 'succeeded', closed: 1, rejected: 1 });
    const after = await locations();
    const today = new Date().toISOString().slice(0, 10);
    expect(after.get('QH-002')).toMatchObject({
      closed_date: today,
      version_number: before.get('QH-002')!.version_number + 1,
    });
    expect(after.get('QH-003')).toMatchObject({ closed_date: null, version_number: 1 });
    // Other Orgs are not in this sheet: untouched.
    expect(after.get('NB-1')).toMatchObject({ closed_date: null, version_number: 1 });
    expect(after.size).toBe(before.size);
  });

  it('reopens a Location that comes back, bumping it once', async () => {
    const closed = (await locations()).get('QH-002')!;
    const run = await importFeed(t.db, 'locations', SAMPLE);
    const after = (await locations()).get('QH-002')!;
    expect(after).toMatchObject({ closed_date: null, version_number: closed.version_number + 1 });
    expect(run.updated).toBeGreaterThanOrEqual(1);
  });

  it('moves the default off a closed Location and counts the bump once', async () => {
    const sheet = await tempSheet(
      'Store code,Business name,Address line 1,Locality,Country / Region\nNB-9,Night Owl Bar,11 Harbourside,Bristol,GB\n',
    );
    await importFeed(t.db, 'locations', sheet, { full: true });
    const rows = await locations();
    expect(rows.get('NB-1')).toMatchObject({
      closed_date: expect.any(String),
      is_default: false,
      version_number: 2,
    });
    expect(rows.get('NB-9')).toMatchObject({ is_default: true, version_number: 1 });
  });
});

describe('Org linking', () => {
  it('puts every row of a sheet without Org columns under --org (company number), older template', async () => {
    const run = await importFeed(t.db, 'locations', 'test/fixtures/locations-older-template.csv', {
      org: '9876543',
    });
    // HL-LDN appears twice: the later row wins and is counted as a duplicate.
    expect(run).toMatchObject({ inserted: 2, duplicates: 1, rejected: 0 });
    const rows = await locations();
    expect(rows.get('HL-BRS')).toMatchObject({
      registration_number: '09876543',
      description: 'Head office.\nVisitors: ring "HLA" at the door.',
    });
    expect(rows.get('HL-LDN')).toMatchObject({
      registration_number: '09876543',
      line2: 'Floor 3',
      version_number: 1,
    });
    expect(rows.get('HL-LDN')!.description).toBe('Moved upstairs.');
  });

  /** The Org of company SC612345 (Glen Orrin), with what its stable domain is made of. */
  const glenOrrin = () =>
    t.db
      .selectFrom('orgs')
      .select(['id', uidOf('orgs').as('uid'), 'domain_cc'])
      .where('registration_number', '=', 'SC612345')
      .executeTakeFirstOrThrow();

  it('links by --org given as a stable Org domain', async () => {
    const org = await glenOrrin();
    const sheet = await tempSheet(
      'Store code,Business name,Address line 1,Country\nGO-EDI,Glen Orrin Edinburgh,1 Royal Mile,GB\n',
    );
    await importFeed(t.db, 'locations', sheet, { org: `${org.uid}.${org.domain_cc}.bizdir.test` });
    expect((await locations()).get('GO-EDI')!.org_id).toBe(org.id);
  });

  it('reads Org domains against the DOMAIN_SUFFIX the run is given, not a default of its own', async () => {
    const org = await glenOrrin();
    // The row of the test above again: nothing changes when it links to the same Org.
    const sheet = await tempSheet(
      'Store code,Business name,Address line 1,Country\nGO-EDI,Glen Orrin Edinburgh,1 Royal Mile,GB\n',
    );
    const stable = `${org.uid}.${org.domain_cc}`;
    const run = await importFeed(t.db, 'locations', sheet, {
      org: `${stable}.example.org`,
      domainSuffix: 'example.org',
    });
    expect(run).toMatchObject({ status: 'succeeded', unchanged: 1, rejected: 0 });
    expect((await locations()).get('GO-EDI')!.org_id).toBe(org.id);
    // Under that configuration the default suffix names no Org, so the run fails.
    await expect(
      importFeed(t.db, 'locations', sheet, { org: `${stable}.bizdir.test`, domainSuffix: 'example.org' }),
    ).rejects.toThrow(ImportFailedError);
  });

  it('links by Company number and Org domain columns, refusing rows that name no Org', async () => {
    const run = await importFeed(t.db, 'locations', 'test/fixtures/locations-company-numbers.csv');
    expect(run).toMatchObject({ inserted: 2, rejected: 4 });
    const rows = await locations();
    expect(rows.get('BL-1')).toMatchObject({ registration_number: 'NI612001' });
    expect(rows.get('OD-1')).toMatchObject({ registration_number: '07687209' });
    const issues = await rejectsOf(t.db, run.id);
    expect(issues.map((i) => [i.line_number, i.column_name])).toEqual([
      [3, 'Company number'],
      [4, 'Company number'],
      [6, 'Org domain'],
      [7, 'Org domain'],
    ]);
    expect(issues[0]!.reason).toMatch(/no registered Org has company number 99999999/);
  });

  it('fails the run for an unknown --org and changes nothing', async () => {
    const before = await locations();
    await expect(
      importFeed(t.db, 'locations', 'test/fixtures/locations-older-template.csv', {
        org: 'nobody.bizdir.test',
      }),
    ).rejects.toThrow(ImportFailedError);
    expect(await locations()).toEqual(before);
  });
});

describe('odd values', () => {
  it('round-trips list items with quotes, backslashes and braces', async () => {
    const csv =
      'Store code,Business name,Address line 1,Country / Region,Labels,Additional categories\n' +
      'Q-1,Quote Shop,1 Odd Lane,GB,"Say ""hi"", back\\slash, {braces}","Caf\u00e9; ""Tea"", Room"\n';
    const run = await importFeed(t.db, 'locations', await tempSheet(csv));
    expect(run).toMatchObject({ inserted: 1, rejected: 0 });
    const row = (await locations()).get('Q-1')!;
    expect(row.labels).toEqual(['Say "hi"', 'back\\slash', '{braces}']);
    expect(row.categories).toEqual(['Caf\u00e9', '"Tea"', 'Room']);
    const again = await importFeed(t.db, 'locations', await tempSheet(csv));
    expect(again).toMatchObject({ unchanged: 1 });
  });
});

describe('partial sheets', () => {
  it('updates the stored Locations of a sheet without Address line 1 and rejects its new store codes', async () => {
    const before = await locations();
    const run = await importFeed(t.db, 'locations', 'test/fixtures/locations-missing-column.csv');
    expect(run).toMatchObject({ status: 'succeeded', inserted: 0, updated: 1, unchanged: 1, rejected: 2 });
    const after = await locations();
    expect(after.get('QH-003')).toMatchObject({
      city: 'Bridlington Harbour',
      line1: before.get('QH-003')!.line1,
      zip: before.get('QH-003')!.zip,
      version_number: before.get('QH-003')!.version_number + 1,
      address_version: before.get('QH-003')!.address_version + 1,
    });
    expect(after.get('QH-003')!.phones).toEqual(before.get('QH-003')!.phones);
    // Unchanged: only the fingerprint of the row it was met through is stored.
    expect(after.get('QH-001')).toEqual({ ...before.get('QH-001'), source_fingerprint: expect.any(String) });
    expect(after.has('QH-009')).toBe(false);
    expect(after.has('ZZ-1')).toBe(false);
    expect(after.size).toBe(before.size);
    // A new store code under an Org that does not exist yet leaves no Org behind either.
    const nowhere = await t.db
      .selectFrom('orgs')
      .select('id')
      .where('name', '=', 'Nowhere Newsagent')
      .execute();
    expect(nowhere).toEqual([]);
    const reason =
      'no Location has this store code, and a new one needs Business name, Address line 1 and Country / Region: the sheet has no Address line 1 column';
    expect(await rejectsOf(t.db, run.id)).toEqual([
      {
        severity: 'rejected',
        line_number: 4,
        column_name: 'Store code',
        reason,
        raw: 'QH-009,Quayside Hardware,Filey,GB',
      },
      {
        severity: 'rejected',
        line_number: 5,
        column_name: 'Store code',
        reason,
        raw: 'ZZ-1,Nowhere Newsagent,Leeds,GB',
      },
    ]);
  });
});

describe('a partial sheet of phones (Store code, Primary phone)', () => {
  const HEADER = 'Store code,Business name,Address line 1,Locality,Country / Region,Primary phone,Website';
  let org: string;
  const parlour = async () => {
    const { rows } = await sql<LocationRow>`
      select l.*, a.line1, a.city, a.country_code, a.version_number as address_version
      from locations l join orgs o on o.id = l.org_id join addresses a on a.id = l.address_id
      where o.name = 'Phone Parlour' order by l.code`.execute(t.db);
    return new Map(rows.map((r) => [r.code, r]));
  };
  const phoneSheet = (...rows: string[]) => tempSheet(`Store code,Primary phone\r\n${rows.join('\r\n')}\r\n`);

  beforeAll(async () => {
    const first = await tempSheet(
      `${HEADER}\r\nPP-1,Phone Parlour,1 Dial Street,Derby,GB,01332 100001,https://pp.example/1\r\nPP-2,Phone Parlour,2 Dial Street,Derby,GB,01332 100002,https://pp.example/2\r\nPP-3,Phone Parlour,3 Dial Street,Derby,GB,01332 100003,\r\n`,
    );
    expect(await importFeed(t.db, 'locations', first)).toMatchObject({ inserted: 3 });
    const { public_slug } = await t.db
      .selectFrom('orgs')
      .select('public_slug')
      .where('name', '=', 'Phone Parlour')
      .executeTakeFirstOrThrow();
    org = `${public_slug}.bizdir.test`;
  });

  it('changes only the phones of the Locations it names, bumping each changed one once', async () => {
    const before = await parlour();
    const run = await importFeed(
      t.db,
      'locations',
      await phoneSheet('PP-1,01332 200001', 'PP-2,01332 100002', 'PP-9,01332 900009'),
      { org },
    );
    expect(run).toMatchObject({ status: 'succeeded', inserted: 0, updated: 1, unchanged: 1, rejected: 1 });
    const after = await parlour();
    expect(after.get('PP-1')).toEqual({
      ...before.get('PP-1'),
      phones: { ...(before.get('PP-1')!.phones as object), default: '01332 200001' },
      version_number: 2,
      content_hash: expect.any(String),
      source_fingerprint: expect.any(String),
      updated: expect.any(Date),
      last_run_id: run.id,
    });
    expect(after.get('PP-1')!.updated.getTime()).toBeGreaterThan(before.get('PP-1')!.updated.getTime());
    expect(after.get('PP-1')).toMatchObject({
      name: 'Phone Parlour',
      line1: '1 Dial Street',
      city: 'Derby',
      country_code: 'GB',
      address_version: 1,
      links: expect.objectContaining({ website_url: 'https://pp.example/1' }),
    });
    expect(after.get('PP-2')).toMatchObject({ version_number: 1, updated: before.get('PP-2')!.updated });
    expect(after.get('PP-3')).toEqual(before.get('PP-3'));
    expect(after.has('PP-9')).toBe(false);
    expect(await rejectsOf(t.db, run.id)).toEqual([
      {
        severity: 'rejected',
        line_number: 4,
        column_name: 'Store code',
        reason:
          'no Location has this store code, and a new one needs Business name, Address line 1 and Country / Region: the sheet has no Business name, Address line 1 and Country / Region columns',
        raw: 'PP-9,01332 900009',
      },
    ]);
  });

  it('changes nothing when imported again, in full reads and in keyed ones', async () => {
    const before = await parlour();
    const sheet = await phoneSheet('PP-1,01332 200001', 'PP-2,01332 100002', 'PP-9,01332 900009');
    for (const batchSize of [undefined, 1]) {
      const run = await importFeed(t.db, 'locations', sheet, { org, ...(batchSize ? { batchSize } : {}) });
      expect(run).toMatchObject({ inserted: 0, updated: 0, unchanged: 2, rejected: 1 });
      expect(await parlour()).toEqual(before);
    }
  });

  it('fails a phones sheet that names no Org, and changes nothing', async () => {
    const before = await parlour();
    const err = await importFeed(t.db, 'locations', await phoneSheet('PP-1,01332 300001')).catch((e) => e);
    expect(err).toBeInstanceOf(ImportFailedError);
    expect(err.message).toMatch(/names no Org: give --org/);
    expect(await parlour()).toEqual(before);
  });

  it('with --full, closes the Locations of the Org it leaves out and keeps the ones it names', async () => {
    const before = await parlour();
    const run = await importFeed(
      t.db,
      'locations',
      await phoneSheet('PP-2,01332 100002', 'PP-1,01332 200001', 'PP-8,01332 800008'),
      { org, full: true },
    );
    expect(run).toMatchObject({
      status: 'succeeded',
      inserted: 0,
      updated: 0,
      unchanged: 2,
      rejected: 1,
      closed: 1,
    });
    const after = await parlour();
    expect(after.get('PP-3')).toMatchObject({
      closed_date: expect.any(String),
      version_number: before.get('PP-3')!.version_number + 1,
    });
    // The sheet's first row is the Org's default now (a --full sheet is its whole list, in order).
    expect(after.get('PP-2')).toMatchObject({
      closed_date: null,
      is_default: true,
      phones: before.get('PP-2')!.phones,
    });
    expect(after.get('PP-1')).toMatchObject({ closed_date: null, is_default: false, name: 'Phone Parlour' });
    expect(after.has('PP-8')).toBe(false);
  });
});

describe('bad files', () => {
  it('fails a sheet without a Store code column and changes nothing', async () => {
    const before = await locations();
    const err = await importFeed(t.db, 'locations', 'test/fixtures/locations-no-store-code.csv').catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(ImportFailedError);
    expect(err.message).toMatch(/Not a location sheet: missing required column Store code/);
    const run = await t.db
      .selectFrom('import_runs')
      .selectAll()
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(run).toMatchObject({ status: 'failed', inserted: 0 });
    expect(await locations()).toEqual(before);
  });

  it('fails a sheet with Store code and no location column, and changes nothing', async () => {
    const before = await locations();
    const sheet = await tempSheet('Store code,Notes\nQH-001,call back\n');
    const err = await importFeed(t.db, 'locations', sheet).catch((e) => e);
    expect(err).toBeInstanceOf(ImportFailedError);
    expect(err.message).toMatch(/Not a location sheet: no location column besides Store code/);
    expect(await locations()).toEqual(before);
  });

  it('refuses the register file given as a location sheet', async () => {
    await expect(importFeed(t.db, 'locations', 'samples/registrar-sample.csv')).rejects.toThrow(/Store code/);
  });

  it.each([
    [
      'a sheet with a header but no data rows',
      async () => `${(await fs.readFile(SAMPLE, 'utf8')).split('\n')[0]}\n`,
      'the file has a header but no data rows',
    ],
    [
      'a sheet whose lines end in CR only (old Mac format)',
      async () => (await fs.readFile(SAMPLE, 'utf8')).replaceAll('\n', '\r'),
      'lines end in CR only (old Mac format): save the file with LF or CRLF line endings',
    ],
  ])('fails %s and changes nothing', async (_what, sheet, reason) => {
    const before = await locations();
    const err = await importFeed(t.db, 'locations', await tempSheet(await sheet())).catch((e) => e);
    expect(err).toBeInstanceOf(ImportFailedError);
    expect(err.message).toBe(reason);
    const run = await t.db
      .selectFrom('import_runs')
      .selectAll()
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(run).toMatchObject({ status: 'failed', error: reason, rows_read: 0, inserted: 0 });
    expect(await locations()).toEqual(before);
  });
});

describe('row fingerprints (re-import fast path)', () => {
  const HEADER = 'Store code,Business name,Address line 1,Locality,Country / Region,Website';
  const fingerprintOf = async (code: string) =>
    await t.db
      .selectFrom('locations')
      .select(['source_fingerprint', 'version_number', 'updated'])
      .where('code', '=', code)
      .executeTakeFirstOrThrow();

  it('takes a re-quoted row with the same content as unchanged, storing its fingerprint without a bump', async () => {
    const plain = await tempSheet(
      `${HEADER}\r\nFP-1,Fingerprint Foods,1 Mill Lane,York,GB,https://fp.example\r\n`,
    );
    expect(await importFeed(t.db, 'locations', plain)).toMatchObject({ inserted: 1 });
    const first = await fingerprintOf('FP-1');
    expect(first.source_fingerprint).toMatch(/^[\w-]{22}$/);

    const quoted = await tempSheet(
      `${HEADER}\r\n"FP-1","Fingerprint Foods","1 Mill Lane",York,GB,https://fp.example\r\n`,
    );
    expect(await importFeed(t.db, 'locations', quoted)).toMatchObject({ unchanged: 1, updated: 0 });
    const second = await fingerprintOf('FP-1');
    expect(second).toMatchObject({ version_number: 1, updated: first.updated });
    expect(second.source_fingerprint).not.toBe(first.source_fingerprint);
  });

  it('trusts a matching fingerprint without merging, and merges again when the row text differs', async () => {
    // Spoil the stored content hash: only the fingerprint can then tell that the row is unchanged.
    await sql`update locations set content_hash = 'spoiled' where code = 'FP-1'`.execute(t.db);
    const quoted = await tempSheet(
      `${HEADER}\r\n"FP-1","Fingerprint Foods","1 Mill Lane",York,GB,https://fp.example\r\n`,
    );
    expect(await importFeed(t.db, 'locations', quoted)).toMatchObject({ unchanged: 1, updated: 0 });
    expect(await fingerprintOf('FP-1')).toMatchObject({ version_number: 1 });

    // Another spelling of the same row is merged and hashed, and the spoiled hash shows as a change.
    const plain = await tempSheet(
      `${HEADER}\r\nFP-1,Fingerprint Foods,1 Mill Lane,York,GB,https://fp.example\r\n`,
    );
    expect(await importFeed(t.db, 'locations', plain)).toMatchObject({ unchanged: 0, updated: 1 });
    expect(await fingerprintOf('FP-1')).toMatchObject({ version_number: 2 });
  });

  it('keeps no fingerprint for a row with warnings, so its warnings come again on every import', async () => {
    const sheet = await tempSheet(
      `${HEADER}\r\nFP-2,Fingerprint Foods,2 Mill Lane,York,GB,not a web address\r\n`,
    );
    expect(await importFeed(t.db, 'locations', sheet)).toMatchObject({ inserted: 1, warnings: 1 });
    expect((await fingerprintOf('FP-2')).source_fingerprint).toBeNull();
    expect(await importFeed(t.db, 'locations', sheet)).toMatchObject({ unchanged: 1, warnings: 1 });
    expect((await fingerprintOf('FP-2')).source_fingerprint).toBeNull();
  });
});

describe('re-import in keyed mode (only the key cells are read while rows prove unchanged)', () => {
  const HEADER = 'Store code,Business name,Address line 1,Locality,Country / Region,Website,Monday hours';
  const row = (
    code: string,
    n: number,
    extra: { city?: string; web?: string; mon?: string; name?: string } = {},
  ) =>
    `${code},${extra.name ?? 'Lazy Larder'},${n} Lazy Lane,${extra.city ?? 'York'},GB,${extra.web ?? 'https://lazy.example'},${extra.mon ?? '09:00-17:00'}`;
  const sheet = (...rows: string[]) => tempSheet(`${HEADER}\r\n${rows.join('\r\n')}\r\n`);
  const byCode = async (code: string) =>
    sql<{ version_number: number; city: string; closed_date: string | null }>`
      select l.version_number, a.city, l.closed_date from locations l join addresses a on a.id = l.address_id
      join orgs o on o.id = l.org_id where l.code = ${code} and o.name = 'Lazy Larder'`
      .execute(t.db)
      .then((r) => r.rows[0]);

  it('first loads the sheet in small batches', async () => {
    const first = await sheet(
      row('L-1', 1),
      row('L-2', 2),
      row('L-3', 3),
      row('L-4', 4, { web: 'not a web address' }),
      row('L-5', 5),
      row('L-6', 6),
      row('L-7', 7, { web: 'not a web address either' }),
    );
    expect(await importFeed(t.db, 'locations', first, { batchSize: 2 })).toMatchObject({
      inserted: 7,
      warnings: 2,
    });
  });

  it('counts, refuses, warns, creates and closes exactly as a full read would', async () => {
    const second = await sheet(
      row('L-1', 1),
      row('L-2', 2),
      row('L-6', 6),
      row('L-4', 4, { web: 'not a web address' }),
      row('L-3', 3, { city: 'Leeds' }),
      row('L-5', 5, { mon: '9 till late' }),
      row('N-1', 1, { name: 'Brand New Bakery' }),
      row('N-2', 2, { name: 'Never Made Ltd', mon: 'whenever' }),
      row('L-6', 6, { city: 'Selby' }),
      row('L-7', 7, { web: 'not a web address either' }),
    );
    const run = await importFeed(t.db, 'locations', second, { batchSize: 2, full: true });
    expect(run).toMatchObject({
      rows_read: 10,
      inserted: 1,
      updated: 1,
      unchanged: 5,
      duplicates: 1,
      rejected: 2,
      warnings: 2,
      closed: 0,
    });
    const issues = await rejectsOf(t.db, run.id);
    expect(issues.map((i) => [i.severity, i.line_number, i.column_name])).toEqual([
      ['warning', 5, 'Website'],
      ['rejected', 7, 'Monday hours'],
      ['rejected', 9, 'Monday hours'],
      ['warning', 11, 'Website'],
    ]);
    expect(await byCode('L-3')).toMatchObject({ version_number: 2, city: 'Leeds' });
    // The refused L-5 keeps its stored values and stays open under --full.
    expect(await byCode('L-5')).toMatchObject({ version_number: 1, closed_date: null });
    // The later L-6 row wins, bumping the Location once.
    expect(await byCode('L-6')).toMatchObject({ version_number: 2, city: 'Selby' });
    const orgs = await t.db
      .selectFrom('orgs')
      .select('name')
      .where('name', 'in', ['Brand New Bakery', 'Never Made Ltd'])
      .execute();
    expect(orgs.map((o) => o.name)).toEqual(['Brand New Bakery']);
  });

  it('reads only the key cells once a batch proves unchanged', async () => {
    const { locationsFeed } = await import('../ingest/locations/locations.feed.js');
    const header = HEADER.split(',');
    const prepared = locationsFeed.prepare(header, { full: false }, HEADER, FEED_CONFIG);
    const cells = (text: string) => text.split(',');
    const unchangedRow = row('L-1', 1);
    const first = prepared.normalize(cells(unchangedRow), 2, unchangedRow);
    expect(first).toMatchObject({ ok: true, record: { kind: 'row' } });
    await t.db.transaction().execute(async (trx) => {
      const run = await sql<{ id: number }>`
        insert into import_runs (feed, source, options) values ('locations', 'test', '{}') returning id`.execute(
        trx,
      );
      const outcome = await prepared.loadBatch(
        trx,
        [{ line: 2, raw: unchangedRow, record: (first as unknown as { record: never }).record }],
        {
          runId: run.rows[0]!.id,
          partNo: 1,
          options: {},
          previousCommitted: Promise.resolve(),
        },
      );
      expect(outcome).toMatchObject({ unchanged: 1, inserted: 0, updated: 0 });
      await sql`delete from import_run_keys where run_id = ${run.rows[0]!.id}`.execute(trx);
    });
    const changed = row('L-2', 2, { city: 'Whitby' });
    expect(prepared.normalize(cells(changed), 3, changed)).toMatchObject({
      ok: true,
      record: { kind: 'keyed', code: 'L-2', org: { businessName: 'Lazy Larder', country: 'GB' } },
    });
    // A row without its key cells is still normalized at once, to say why it is refused.
    const nameless = 'L-9,,9 Lazy Lane,York,GB,,';
    expect(prepared.normalize(cells(nameless), 4, nameless)).toMatchObject({
      ok: true,
      record: { kind: 'refused' },
    });
  });
});

describe('the default Location and the sheet order', () => {
  const HEADER = 'Store code,Business name,Address line 1,Locality,Country / Region';
  const sheet = (...codes: string[]) =>
    tempSheet(
      `${HEADER}\r\n${codes.map((c) => `${c},Order Oven,${c.slice(2)} Oven Row,Bath,GB`).join('\r\n')}\r\n`,
    );
  const ovens = async () => {
    const { rows } = await sql<{ code: string; is_default: boolean; version_number: number }>`
      select l.code, l.is_default, l.version_number from locations l join orgs o on o.id = l.org_id
      where o.name = 'Order Oven' order by l.code`.execute(t.db);
    return Object.fromEntries(rows.map((r) => [r.code, [r.is_default, r.version_number]]));
  };

  it('makes an Org’s first row its default', async () => {
    await importFeed(t.db, 'locations', await sheet('O-1', 'O-2', 'O-3'));
    expect(await ovens()).toEqual({ 'O-1': [true, 1], 'O-2': [false, 1], 'O-3': [false, 1] });
  });

  it('keeps the default where it is when a partial sheet lists another Location first', async () => {
    const run = await importFeed(t.db, 'locations', await sheet('O-3', 'O-1'));
    expect(run).toMatchObject({ unchanged: 2, updated: 0 });
    expect(await ovens()).toEqual({ 'O-1': [true, 1], 'O-2': [false, 1], 'O-3': [false, 1] });
  });

  it('follows the order of a --full sheet, bumping the two Locations whose default flips', async () => {
    const run = await importFeed(t.db, 'locations', await sheet('O-2', 'O-3', 'O-1'), { full: true });
    expect(run).toMatchObject({ unchanged: 3, closed: 0 });
    expect(await ovens()).toEqual({ 'O-1': [false, 2], 'O-2': [true, 2], 'O-3': [false, 1] });
    // The same --full sheet again changes nothing.
    await importFeed(t.db, 'locations', await sheet('O-2', 'O-3', 'O-1'), { full: true });
    expect(await ovens()).toEqual({ 'O-1': [false, 2], 'O-2': [true, 2], 'O-3': [false, 1] });
    const left = await sql<{ n: number }>`select count(*)::int as n from import_run_firsts`.execute(t.db);
    expect(left.rows[0]!.n).toBe(0);
  });
});

describe('a sheet that starts naming its Org', () => {
  const byCode = async () => {
    const { rows } = await sql<{
      code: string;
      id: number;
      uid: string;
      org: string;
      is_default: boolean;
      version_number: number;
    }>`
      select l.code, l.id, l.uid, o.name as org, l.is_default, l.version_number from locations l
      join orgs o on o.id = l.org_id where l.code like 'HX-%' order by l.code`.execute(t.db);
    return Object.fromEntries(rows.map((r) => [r.code, r]));
  };

  it('moves the Location from the by-name Org to the Org named by company number, keeping its domain', async () => {
    const byName = await tempSheet(
      'Store code,Business name,Address line 1,Locality,Country / Region\r\nHX-1,Harbour Lights Cafe,1 Pier Road,Whitby,GB\r\nHX-2,Harbour Lights Cafe,2 Pier Road,Whitby,GB\r\n',
    );
    expect(await importFeed(t.db, 'locations', byName)).toMatchObject({ inserted: 2 });
    const before = await byCode();
    expect(before['HX-1']).toMatchObject({ org: 'Harbour Lights Cafe', is_default: true, version_number: 1 });

    const named = await tempSheet(
      'Store code,Business name,Address line 1,Locality,Country / Region,Company number\r\nHX-1,Harbour Lights Cafe,1 Pier Road,Whitby,GB,7687209\r\n',
    );
    const run = await importFeed(t.db, 'locations', named);
    expect(run).toMatchObject({ inserted: 0, updated: 1 });
    const after = await byCode();
    expect(Object.keys(after)).toEqual(['HX-1', 'HX-2']);
    expect(after['HX-1']).toMatchObject({
      id: before['HX-1']!.id,
      uid: before['HX-1']!.uid,
      org: 'ACME WIDGETS LTD.',
      // ACME keeps its own default (0042, from the sample sheet).
      is_default: false,
      version_number: 2,
    });
    // The by-name Org keeps its other Location, now its default.
    expect(after['HX-2']).toMatchObject({ org: 'Harbour Lights Cafe', is_default: true, version_number: 2 });

    // The same sheet again: nothing moves, nothing changes.
    expect(await importFeed(t.db, 'locations', named)).toMatchObject({
      unchanged: 1,
      updated: 0,
      inserted: 0,
    });
    expect((await byCode())['HX-1']).toMatchObject({ version_number: 2 });
  });
});

describe('a first import that meets its keys again in later batches (one row a batch)', () => {
  const HEADER =
    'Store code,Business name,Address line 1,Locality,Country / Region,Company number,Monday hours';
  const quayside = async () => {
    const { rows } = await sql<{
      code: string;
      org: string;
      city: string;
      version: number;
      closed: boolean;
      dflt: boolean;
    }>`
      select l.code, o.name as org, a.city, l.version_number as version, l.closed_date is not null as closed,
        l.is_default as dflt
      from locations l join orgs o on o.id = l.org_id join addresses a on a.id = l.address_id
      where l.code like 'QK-%' order by l.code, o.name`.execute(t.db);
    return rows.map((r) => [r.code, r.org, r.city, r.version, r.closed, r.dflt]);
  };

  it('counts repeats of new, refused and moved keys as a whole-file read would, and --full closes only what it missed', async () => {
    const before = await tempSheet(`${HEADER}\r\nQK-0,Quayside Kiosk,0 Quay,Hull,GB,,\r\n`);
    expect(await importFeed(t.db, 'locations', before)).toMatchObject({ inserted: 1 });
    const sheet = await tempSheet(
      `${[
        HEADER,
        'QK-1,Quayside Kiosk,1 Quay,Hull,GB,,',
        'QK-2,Quayside Kiosk,2 Quay,Hull,GB,,whenever',
        'QK-1,Quayside Kiosk,1 Quay,Goole,GB,,',
        'QK-2,Quayside Kiosk,2 Quay,Hull,GB,,',
        'QK-1,Quayside Kiosk,1 Quay,Goole,GB,09876543,',
        'QK-1,Quayside Kiosk,1 Quay,Selby,GB,,',
        'QK-3,Quayside Kiosk,3 Quay,Hull,GB,,',
      ].join('\r\n')}\r\n`,
    );
    // Harbour Light's Locations from earlier tests: this --full sheet names none of them.
    const { rows: others } = await sql<{ n: number }>`
      select count(*)::int as n from locations l join orgs o on o.id = l.org_id
      where o.registration_number = '09876543' and l.closed_date is null`.execute(t.db);
    const run = await importFeed(t.db, 'locations', sheet, { batchSize: 1, full: true });
    // Line 4 repeats a key created by line 2, line 5 one refused by line 3, line 7 the key that
    // line 6 moved to Harbour Light: each a duplicate, whichever batch met it first.
    expect(run).toMatchObject({
      inserted: 2,
      updated: 1,
      unchanged: 0,
      rejected: 1,
      duplicates: 3,
      closed: 1 + others[0]!.n,
    });
    // A run bumps a Location once however often it meets it: never, one it created itself.
    expect(await quayside()).toEqual([
      ['QK-0', 'Quayside Kiosk', 'Hull', 2, true, false],
      ['QK-1', 'HARBOUR LIGHT ANALYTICS LIMITED', 'Goole', 1, false, expect.any(Boolean)],
      ['QK-1', 'Quayside Kiosk', 'Selby', 1, false, true],
      ['QK-2', 'Quayside Kiosk', 'Hull', 1, false, false],
      ['QK-3', 'Quayside Kiosk', 'Hull', 1, false, false],
    ]);
    expect((await rejectsOf(t.db, run.id)).map((i) => [i.line_number, i.column_name])).toEqual([
      [3, 'Monday hours'],
    ]);
  });
});

describe('a sheet saved as Windows-1252', () => {
  const HEADER =
    'Store code,Business name,Address line 1,Address line 2,Address line 3,Address line 4,Address line 5,Sub-locality,Locality,Administrative area,Country / Region,Postal code,Latitude,Longitude,Primary phone,Additional phones,Website,Primary category,Additional categories,Sunday hours,Monday hours,Tuesday hours,Wednesday hours,Thursday hours,Friday hours,Saturday hours,Special hours,From the business,Opening date,Logo photo,Cover photo,Other photos,Labels,AdWords location extensions phone';
  const sheet = [
    HEADER,
    'CQ-1,Caf\u00e9 Quayside Hardware,1 Pier Road,,,,,,Whitby,,GB,YO21 3PU,,,+44 1947 600500,,,Hardware store,,x,08:30-17:30,08:30-17:30,08:30-17:30,08:30-17:30,08:30-17:30,09:00-16:00,,,,,,,,',
    'CQ-2,Quayside Chandlery,2 Pier Road,,,,,,Whitby,,GB,YO21 3PU,,,+44 1947 600501,,,Marine supply store,,x,08:30-17:30,08:30-17:30,08:30-17:30,08:30-17:30,08:30-17:30,09:00-16:00,,,,,,,,',
    'CQ-3,Quayside Chandlery,3 Pier Road,,,,,,Whitby,,GB,YO21 3PU,,,+44 1947 600502,,,Marine supply store,,x,08:30-17:30,08:30-17:30,08:30-17:30,08:30-17:30,08:30-17:30,09:00-16:00,,"Rope, paint \u2014 ask for Dave\u2019s ""knots"".",,,,,,',
  ].join('\r\n');
  /** As Excel saves "CSV": Windows-1252, where é is the byte E9, — the byte 97 and ’ the byte 92. */
  const cp1252 = (text: string) =>
    Buffer.from(text.replaceAll('\u2014', '\u0097').replaceAll('\u2019', '\u0092'), 'latin1');

  it('rejects the rows that are not UTF-8 with their lines and keeps what the UTF-8 sheet stored', async () => {
    const first = await importFeed(t.db, 'locations', await tempSheet(`${sheet}\r\n`));
    expect(first).toMatchObject({ status: 'succeeded', inserted: 3, rejected: 0 });
    const before = await locations();
    expect(before.get('CQ-1')!.org_name).toBe('Caf\u00e9 Quayside Hardware');
    const run = await importFeed(t.db, 'locations', await tempSheet(cp1252(`${sheet}\r\n`)));
    expect(run).toMatchObject({ status: 'succeeded', rows_read: 3, unchanged: 1, updated: 0, rejected: 2 });
    const reason = 'not valid UTF-8 text (the file may be Windows-1252 or Latin-1: save it as UTF-8)';
    const issues = await rejectsOf(t.db, run.id);
    expect(issues.map((i) => [i.severity, i.line_number, i.column_name, i.reason])).toEqual([
      ['rejected', 2, null, reason],
      ['rejected', 4, null, reason],
    ]);
    expect(issues[0]!.raw).toMatch(/^CQ-1,Caf\uFFFD Quayside Hardware,1 Pier Road,/);
    expect(await locations()).toEqual(before);
  });
});

describe('--full of a sheet cut short', () => {
  const HEADER = 'Store code,Business name,Address line 1,Locality,Country / Region';
  const rows = Array.from(
    { length: 1_200 },
    (_, i) => `GV-${String(i).padStart(4, '0')},Guard Vans,${i} Depot Road,Leeds,GB`,
  );
  const openVans = async () => {
    const { rows: found } = await sql<{ n: number }>`
      select count(*)::int as n from locations l join orgs o on o.id = l.org_id
      where o.name = 'Guard Vans' and l.closed_date is null`.execute(t.db);
    return found[0]!.n;
  };

  it("refuses to close more of the named Orgs' Locations than --max-gone, and closes them when allowed", async () => {
    await importFeed(t.db, 'locations', await tempSheet(`${HEADER}\n${rows.join('\n')}\n`));
    expect(await openVans()).toBe(1_200);
    // The first 100 rows, ending at a line end: nothing in the file says it is cut.
    const cut = await tempSheet(`${HEADER}\n${rows.slice(0, 100).join('\n')}\n`);
    expect(await permanentFailure(importFeed(t.db, 'locations', cut, { full: true }))).toBe(
      '--full would mark 1,100 of the 1,200 open Locations of the Orgs the sheet names (91.7%) as gone, ' +
        'more than --max-gone 10%: is a part missing, or a file cut short? Nothing was marked as gone ' +
        '(the rows read are loaded). If they really are gone, import again with --max-gone 93%',
    );
    expect(await openVans()).toBe(1_200);
    const run = await importFeed(t.db, 'locations', cut, { full: true, maxGone: '93' });
    expect(run).toMatchObject({ status: 'succeeded', closed: 1_100 });
    expect(await openVans()).toBe(100);
  });
});

async function tempSheet(csv: string | Buffer): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bizdir-loc-'));
  const file = path.join(dir, 'sheet.csv');
  await fs.writeFile(file, csv);
  return file;
}
