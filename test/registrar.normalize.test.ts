import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import {
  informalNameOf,
  normalizeCompanyNumber,
  normalizeRegistrarRow,
  parseRegisterDate,
  parseSicCode,
  readableCompanyNumber,
} from '../ingest/registrar/registrar.normalize.js';
import {
  mapRegistrarHeader,
  REGISTRAR_HEADER_LINE,
  readRegistrarRow,
} from '../ingest/registrar/registrar.parser.js';
import { countryCodeOf } from '../shared/countries.js';
import { FeedFormatError } from '../shared/errors.js';
import { registrarFields, registrarLine } from './support/registrar-csv.js';

const TODAY = new Date('2026-11-22T00:00:00Z');
const header = REGISTRAR_HEADER_LINE.split(',');

function normalize(fields: Parameters<typeof registrarFields>[2], number = '07687209', name = 'ACME LTD') {
  const line = registrarLine(registrarFields(number, name, fields));
  const values = Papa.parse<string[]>(line).data[0]!;
  return normalizeRegistrarRow(readRegistrarRow(values, mapRegistrarHeader(header)), 'GB', TODAY);
}

describe('register header', () => {
  it('maps the real header (14 names with a leading space) by trimmed name', () => {
    expect(header.filter((h) => h.startsWith(' '))).toHaveLength(14);
    const index = mapRegistrarHeader(header.map((h) => h.trim()));
    expect(index.number).toBe(1);
    expect(index.line2).toBe(5);
  });

  it('maps columns by name, not position', () => {
    const shuffled = [...header].reverse();
    const index = mapRegistrarHeader(shuffled.map((h) => h.trim()));
    expect(shuffled[index.name]!.trim()).toBe('CompanyName');
  });

  it('refuses a header with missing columns, naming them', () => {
    const without = header.map((h) => h.trim()).filter((h) => h !== 'CompanyNumber' && h !== 'URI');
    expect(() => mapRegistrarHeader(without)).toThrow(FeedFormatError);
    expect(() => mapRegistrarHeader(without)).toThrow(/missing columns CompanyNumber, URI/);
  });
});

describe('company numbers', () => {
  it.each([
    ['07687209', '07687209'],
    ['7687209', '07687209'],
    ['86', '00000086'],
    ['SC612345', 'SC612345'],
    ['sc612345', 'SC612345'],
    ['SC12345', 'SC012345'],
    ['NI612001', 'NI612001'],
    ['R0000123', 'R0000123'],
    ['OC412345', 'OC412345'],
    ['LP019876', 'LP019876'],
    ['FC031234', 'FC031234'],
    ['CE001234', 'CE001234'],
    [' 0768 7209 ', '07687209'],
    ['1234/567', null],
    ['123456789', null],
    ['', null],
  ])('%j -> %j', (input, expected) => {
    expect(normalizeCompanyNumber(input)).toBe(expected);
  });
});

describe('the company number of a rejected row', () => {
  const line = (number: string, fields: Parameters<typeof registrarFields>[2] = {}) =>
    registrarLine(registrarFields(number, 'ACME LTD', fields));
  it.each([
    ['a row without a name', line('07687209', { CompanyName: '' }), '07687209'],
    ['a row cut after its number', line('SC612345').split(',').slice(0, 3).join(','), 'SC612345'],
    [
      'a stray quote after the number',
      line('07687209').replace('"1 HIGH STREET"', '"1 "HIGH" STREET"'),
      '07687209',
    ],
    ['a number written short and in lower case', line('sc12345', { CompanyName: '' }), 'SC012345'],
    ['unquoted fields', 'ACME LTD, 07687209 ,x', '07687209'],
    [
      'a name quoted with a comma and a doubled quote',
      line('07687209', { CompanyName: 'A, "B" LTD' }),
      '07687209',
    ],
    [
      'a stray quote before the number',
      line('07687209', { CompanyName: 'A "B" LTD' }).replace('""B""', '"B"'),
      null,
    ],
    ['a row of one field', '"ACME LTD"', null],
    ['an empty number', line(''), null],
    ['an unusable number', line('1234/567'), null],
  ])('%s', (_what, raw, expected) => {
    expect(readableCompanyNumber(raw, mapRegistrarHeader(header.map((h) => h.trim())).number)).toBe(expected);
  });
});

describe('dates', () => {
  it.each([
    ['14/03/2016', '2016-03-14'],
    ['3/4/1965', '1965-04-03'],
    ['29/02/2024', '2024-02-29'],
    ['', null],
    ['31/02/2019', 'invalid'],
    ['29/02/2023', 'invalid'],
    ['00/01/2020', 'invalid'],
    ['01/13/2020', 'invalid'],
    ['01/01/1320', 'invalid'],
    ['01/01/2999', 'invalid'],
    ['2016-03-14', 'invalid'],
  ])('%j -> %j', (input, expected) => {
    expect(parseRegisterDate(input, TODAY)).toBe(expected);
  });
});

describe('SIC codes', () => {
  it.each([
    ['62020 - Information technology consultancy activities', '62020'],
    ['9999 - Dormant company', '9999'],
    ['None Supplied', null],
    ['', null],
    ['123456 - too long', null],
  ])('%j -> %j', (input, expected) => {
    expect(parseSicCode(input)).toBe(expected);
  });
});

describe('informal names', () => {
  it.each([
    ['ACME WIDGETS LTD', 'ACME WIDGETS'],
    ['ACME WIDGETS LTD.', 'ACME WIDGETS'],
    ['ACME WIDGETS L.T.D.', 'ACME WIDGETS'],
    ['ACME WIDGETS LIMITED', 'ACME WIDGETS'],
    ['ACME WIDGETS, LIMITED', 'ACME WIDGETS'],
    ['ACME WIDGETS (LIMITED)', 'ACME WIDGETS'],
    ['ACME WIDGETS PLC', 'ACME WIDGETS'],
    ['ACME WIDGETS P.L.C.', 'ACME WIDGETS'],
    ['ACME WIDGETS PUBLIC LIMITED COMPANY', 'ACME WIDGETS'],
    ['NORTHGATE PARTNERS LLP', 'NORTHGATE PARTNERS'],
    ['NORTHGATE PARTNERS L.L.P.', 'NORTHGATE PARTNERS'],
    ['RIVERSIDE FUND LP', 'RIVERSIDE FUND'],
    ['CLYDE VENTURES L.P.', 'CLYDE VENTURES'],
    ['RIVERSIDE FUND LIMITED PARTNERSHIP', 'RIVERSIDE FUND'],
    ['GREEN SHOOTS C.I.C.', 'GREEN SHOOTS'],
    ['GREEN SHOOTS CIC', 'GREEN SHOOTS'],
    ['GREEN SHOOTS COMMUNITY INTEREST COMPANY', 'GREEN SHOOTS'],
    ['CAFFI CYMRU CYFYNGEDIG', 'CAFFI CYMRU'],
    ['BRAGDY BACH CYF', 'BRAGDY BACH'],
    ['CWMNI DA CCC', 'CWMNI DA'],
    ['OLD FIRM ESTATES UNLIMITED', 'OLD FIRM ESTATES'],
    ['MÜLLER & SÖHNE MASCHINENBAU GMBH', 'MÜLLER & SÖHNE MASCHINENBAU'],
    ['ATLANTIC BRIDGE TRADING INC', 'ATLANTIC BRIDGE TRADING'],
    ['ATLANTIC BRIDGE TRADING INC.', 'ATLANTIC BRIDGE TRADING'],
    ['SUNRISE EXPORTS PRIVATE LIMITED', 'SUNRISE EXPORTS'],
    ['KOALA HOLDINGS PTY LTD', 'KOALA HOLDINGS'],
    ['SMITH & CO LIMITED', 'SMITH & CO'],
    ['NORTHERN ROCKS (UK) LIMITED', 'NORTHERN ROCKS (UK)'],
    ['FRIENDS OF THE VALLEY GARDENS', 'FRIENDS OF THE VALLEY GARDENS'],
    ['LIMITED', 'LIMITED'],
    ['THE LIMITED EDITION COMPANY', 'THE LIMITED EDITION COMPANY'],
  ])('%j -> %j', (name, informal) => {
    expect(informalNameOf(name)).toBe(informal);
  });
});

describe('countries', () => {
  it.each([
    ['ENGLAND', 'GB'],
    ['WALES', 'GB'],
    ['SCOTLAND', 'GB'],
    ['NORTHERN IRELAND', 'GB'],
    ['UNITED KINGDOM', 'GB'],
    ['ENGLAND & WALES', 'GB'],
    ['GUERNSEY', 'GG'],
    ['JERSEY', 'JE'],
    ['ISLE OF MAN', 'IM'],
    ['GERMANY', 'DE'],
    ['IRELAND', 'IE'],
    ['REPUBLIC OF IRELAND', 'IE'],
    ['UNITED STATES', 'US'],
    ['USA', 'US'],
    ['VIRGIN ISLANDS, BRITISH', 'VG'],
    ['HONG KONG', 'HK'],
    ['NETHERLANDS', 'NL'],
    ["CÔTE D'IVOIRE", 'CI'],
    ['KOREA, REPUBLIC OF', 'KR'],
    ['NARNIA', null],
  ])('%j -> %j', (name, code) => {
    expect(countryCodeOf(name)).toBe(code);
  });

  it('maps an empty register country to the register country', () => {
    const r = normalize({ 'RegAddress.Country': '' });
    expect(r.ok && r.record.address.country_code).toBe('GB');
  });

  it('keeps an unknown country as null with a warning', () => {
    const r = normalize({ 'RegAddress.Country': 'NARNIA' });
    expect(r.ok && r.record.address.country_code).toBeNull();
    expect(r.warnings).toEqual([{ column: 'RegAddress.Country', reason: 'unknown country "NARNIA"' }]);
  });
});

describe('whole rows', () => {
  it('normalizes a real-format row', () => {
    const r = normalize(
      {
        'RegAddress.CareOf': 'SMITH ACCOUNTANTS',
        'RegAddress.POBox': '123',
        'RegAddress.AddressLine1': '2ND FLOOR, 7 QUAY STREET',
        'RegAddress.County': 'AVON,',
        'RegAddress.PostCode': 'bs1  4db',
        CompanyStatus: 'Active - Proposal to Strike off',
        CompanyCategory: 'Private Limited Company',
        'SICCode.SicText_1': '9999 - Dormant company',
      },
      '9876543',
      'HARBOUR LIGHT ANALYTICS LIMITED',
    );
    expect(r).toMatchObject({
      ok: true,
      warnings: [],
      record: {
        number: '09876543',
        name: 'HARBOUR LIGHT ANALYTICS LIMITED',
        informal_name: 'HARBOUR LIGHT ANALYTICS',
        registration_date: '2016-03-14',
        sic_code: '9999',
        company_status: 'Active - Proposal to Strike off',
        company_category: 'Private Limited Company',
        address: {
          line1: '2ND FLOOR, 7 QUAY STREET',
          line2: null,
          line3: 'C/O SMITH ACCOUNTANTS, PO BOX 123',
          city: 'LONDON',
          state: 'AVON',
          zip: 'BS1 4DB',
          country_code: 'GB',
        },
      },
    });
  });

  it('keeps the company name exactly as registered, runs of spaces included', () => {
    // 13198105 is a real register row with two spaces in its name.
    const r = normalize({}, '13198105', 'SHARPEREDGES  SHARPENING LTD');
    expect(r.ok && r.record.name).toBe('SHARPEREDGES  SHARPENING LTD');
    expect(r.ok && r.record.informal_name).toBe('SHARPEREDGES  SHARPENING');
    const padded = normalize({}, '13198105', '  SHARPEREDGES \t SHARPENING LTD ');
    expect(padded.ok && padded.record.name).toBe('SHARPEREDGES \t SHARPENING LTD');
  });

  it('loads an impossible incorporation date as null with a warning', () => {
    const r = normalize({ IncorporationDate: '31/02/2019' });
    expect(r.ok && r.record.registration_date).toBeNull();
    expect(r.warnings).toEqual([{ column: 'IncorporationDate', reason: 'impossible date "31/02/2019"' }]);
  });

  it.each([
    ['', 'ACME LTD', 'missing company number'],
    ['07687209', '', 'missing company name'],
    ['1234/567', 'ACME LTD', 'unusable company number "1234/567"'],
  ])('rejects number %j name %j', (number, name, reason) => {
    const r = normalize({}, number, name);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reject.reason).toBe(reason);
  });

  it('gives the same hashes for the same content and different ones when the address changes', () => {
    const a = normalize({});
    const b = normalize({});
    const c = normalize({ 'RegAddress.PostCode': 'EC1A 1BC' });
    const d = normalize({ CompanyStatus: 'Liquidation' });
    if (!a.ok || !b.ok || !c.ok || !d.ok) throw new Error('expected records');
    expect(b.record.orgHash).toBe(a.record.orgHash);
    expect(c.record.addressHash).not.toBe(a.record.addressHash);
    expect(c.record.orgHash).not.toBe(a.record.orgHash);
    expect(d.record.addressHash).toBe(a.record.addressHash);
    expect(d.record.orgHash).not.toBe(a.record.orgHash);
  });

  it('keeps the hashes stored by earlier releases (an unchanged row must not look changed)', () => {
    const a = normalize({});
    if (!a.ok) throw new Error('expected a record');
    // Worked out with the createHash('md5').update().digest('base64url') of the release before.
    expect(a.record.orgHash).toBe('8uHArLHcn0Lp0F4_Q6uEVw');
    expect(a.record.addressHash).toBe('IYT8LvQmxwDD_jtlWR0MNw');
  });
});
