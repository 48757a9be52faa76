import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import { ImportOptionsError } from '../ingest/feed-handler.js';
import { locationsFeed } from '../ingest/locations/locations.feed.js';
import { headerKey, matchLocationHeaders, newLocationGap } from '../ingest/locations/locations.headers.js';
import { normalizeLocationRow, urlOf, yearOf } from '../ingest/locations/locations.normalize.js';
import { mergeAddress } from '../ingest/locations/locations.records.js';
import { regionOf } from '../ingest/locations/locations.regions.js';
import { FeedFormatError } from '../shared/errors.js';

const EN_US =
  'Store code,Business name,Address line 1,Address line 2,Address line 3,Address line 4,Address line 5,Sub-locality,Locality,Administrative area,Country / Region,Postal code,Latitude,Longitude,Primary phone,Additional phones,Website,Primary category,Additional categories,Sunday hours,Monday hours,Tuesday hours,Wednesday hours,Thursday hours,Friday hours,Saturday hours,Special hours,From the business,Opening date,Logo photo,Cover photo,Other photos,Labels,AdWords location extensions phone';

const ROW_1 =
  'QH-001,Quayside Hardware,14 Harbour Row,,,,,Old Town,Whitby,,GB,YO21 3PU,54.4858,-0.6149,+44 1947 600123,"+44 1947 600124",https://quayside.example.co.uk/whitby,Hardware store,"Garden center, Key duplication service",x,08:30-17:30,08:30-17:30,08:30-17:30,08:30-17:30,08:30-17:30,"09:00-12:30, 13:30-16:00","2026-12-24: 08:30-13:00, 2026-12-25: x, 2026-12-26: x","Family-run hardware shop on the harbour since 1962.",1962-05,https://cdn.quayside.example.co.uk/logo.png,,,"Yorkshire, Coast",';

/** Parses CSV text the way the import does: every value a string, header row first. */
function sheet(csv: string) {
  const parsed = Papa.parse<string[]>(csv.trim(), { skipEmptyLines: true });
  const [header, ...rows] = parsed.data;
  return { columns: matchLocationHeaders(header!), rows };
}

function one(csv: string) {
  const { columns, rows } = sheet(csv);
  return normalizeLocationRow(rows[0]!, columns);
}

describe('location sheet headers', () => {
  it('matches after trimming, case-folding and collapsing spaces around /', () => {
    expect(headerKey('  Country / Region ')).toBe('country/region');
    expect(headerKey('COUNTRY/REGION')).toBe('country/region');
    expect(headerKey('\uFEFFStore  code')).toBe('store code');
  });

  it('reads the en-US, en-GB and older templates to the same fields', () => {
    const us = matchLocationHeaders(EN_US.split(','));
    expect(us.index.country).toBe(10);
    expect(us.index.description).toBe(27);
    const gb = matchLocationHeaders(
      EN_US.replace('Store code', 'Shop code')
        .replace('Country / Region', 'Country/Region')
        .replace('Postal code', 'Postcode')
        .split(','),
    );
    expect(gb.index).toEqual(us.index);
    expect(gb.name.storeCode).toBe('Shop code');
    const old = matchLocationHeaders([
      'Store code',
      'Business name',
      'Address line 1',
      'Country',
      'Description',
      'Profile photo',
      'Preferred photo',
    ]);
    expect(old.index).toEqual({ storeCode: 0, businessName: 1, addressLine1: 2, country: 3, description: 4 });
  });

  it('ignores photo, attribute and unknown columns but takes the optional Org and link columns', () => {
    const cols = matchLocationHeaders([
      ...EN_US.split(','),
      'Amenities: Wi-Fi (wi_fi)',
      'Org domain',
      ' company NUMBER ',
      'Socialnet URL',
      'Videosite url',
    ]);
    expect(cols.index.orgDomain).toBe(35);
    expect(cols.index.companyNumber).toBe(36);
    expect(cols.index.socialnetUrl).toBe(37);
    expect(cols.index.videositeUrl).toBe(38);
    expect(Object.values(cols.index)).not.toContain(34);
  });

  it('takes a sheet with Store code and any location column, refusing one without Store code', () => {
    expect(matchLocationHeaders(['Store code', 'Primary phone']).index).toEqual({
      storeCode: 0,
      primaryPhone: 1,
    });
    expect(matchLocationHeaders(['Shop code', 'Business name']).index).toEqual({
      storeCode: 0,
      businessName: 1,
    });
    expect(() => matchLocationHeaders(['Business name', 'Address line 1', 'Country'])).toThrow(
      FeedFormatError,
    );
    expect(() => matchLocationHeaders(['Business name', 'Address line 1', 'Country'])).toThrow(
      'Not a location sheet: missing required column Store code',
    );
    expect(() => matchLocationHeaders(['CompanyName', ' CompanyNumber'])).toThrow(
      /missing required column Store code/,
    );
  });

  it('refuses a sheet whose only known columns are Store code and the Org columns', () => {
    for (const header of [
      ['Store code'],
      ['Store code', 'Amenities: Wi-Fi (wi_fi)', 'Cover photo'],
      ['Store code', 'Org domain', 'Company number'],
    ]) {
      expect(() => matchLocationHeaders(header)).toThrow(
        /^Not a location sheet: no location column besides Store code/,
      );
    }
  });

  it('says whether a sheet can create Locations, naming the columns it lacks', () => {
    expect(newLocationGap(matchLocationHeaders(EN_US.split(',')))).toBeNull();
    expect(
      newLocationGap(matchLocationHeaders(['Store code', 'Business name', 'Address line 1', 'Country'])),
    ).toBeNull();
    expect(newLocationGap(matchLocationHeaders(['Store code', 'Business name', 'Country / Region']))).toBe(
      'no Location has this store code, and a new one needs Business name, Address line 1 and Country / Region: the sheet has no Address line 1 column',
    );
    expect(newLocationGap(matchLocationHeaders(['Store code', 'Primary phone']))).toMatch(
      /the sheet has no Business name, Address line 1 and Country \/ Region columns$/,
    );
  });

  it('fails a sheet that can name no Org: no Org columns, no --org, no Business name and country', () => {
    const prepare = (header: string[], options: { org?: string } = {}) =>
      locationsFeed.prepare(header, { full: false, ...options }, header.join(','), {
        domainSuffix: 'bizdir.test',
      });
    expect(() => prepare(['Store code', 'Primary phone'])).toThrow(FeedFormatError);
    expect(() => prepare(['Store code', 'Business name', 'Primary phone'])).toThrow(
      /names no Org: give --org, or add an Org domain or Company number column, or Business name and Country \/ Region/,
    );
    expect(() => prepare(['Store code', 'Primary phone'], { org: 'acme.bizdir.test' })).not.toThrow();
    expect(() => prepare(['Store code', 'Org domain', 'Primary phone'])).not.toThrow();
    expect(() => prepare(['Store code', 'Business name', 'Country', 'Primary phone'])).not.toThrow();
  });
});

describe('location rows', () => {
  it('reads the spec example row into a Location, Address, phones, links and hours', () => {
    const result = one(`${EN_US}\n${ROW_1}`);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const { location, address, org } = result.row;
    expect(org).toEqual({ businessName: 'Quayside Hardware', country: 'GB' });
    expect(address).toEqual({
      country_code: 'GB',
      line1: '14 Harbour Row',
      line2: null,
      line3: null,
      zip: 'YO21 3PU',
      city: 'Whitby',
      sublocality: 'Old Town',
      state: null,
      state_code: null,
    });
    expect(location.code).toBe('QH-001');
    expect(location.name).toBe('Quayside Hardware');
    expect(location.phones).toEqual({ default: '+44 1947 600123', alt: '+44 1947 600124', local: null });
    expect(location.links).toEqual({ website_url: 'https://quayside.example.co.uk/whitby' });
    expect(location.normal[0]).toEqual([{ day: 0, open: false, open_time: '00:00', close_time: '00:00' }]);
    expect(location.normal[6]).toEqual([
      { day: 6, open: true, open_time: '09:00', close_time: '12:30' },
      { day: 6, open: true, open_time: '13:30', close_time: '16:00' },
    ]);
    expect(location.special).toHaveLength(3);
    expect(location.year_established).toBe(1962);
    expect(location.latitude).toBe(54.4858);
    expect(location.categories).toEqual(['Garden center', 'Key duplication service']);
    expect(location.labels).toEqual(['Yorkshire', 'Coast']);
    expect(location.description).toBe('Family-run hardware shop on the harbour since 1962.');
    expect(location.logo_url).toBe('https://cdn.quayside.example.co.uk/logo.png');
  });

  it('keeps quoted line breaks, quotes, commas and non-ASCII text; codes and postcodes stay strings', () => {
    const csv = `Store code,Business name,Address line 1,Country,Description,Postal code,Primary phone\r\n007,"Café ""Zoë"" & Søn",Straße 1,DE,"Line one,\r\nline two ""quoted""",01067,0049 351 000\r\n`;
    const result = one(csv);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.row.location.code).toBe('007');
    expect(result.row.location.name).toBe('Café "Zoë" & Søn');
    expect(result.row.location.description).toBe('Line one,\nline two "quoted"');
    expect(result.row.address.zip).toBe('01067');
    expect(result.row.location.phones.default).toBe('0049 351 000');
  });

  it('tells an absent column (undefined: keep) from a present empty one (null: clear)', () => {
    const result = one(
      'Store code,Business name,Address line 1,Country / Region,Monday hours,Website,Opening date\nA1,Acme,1 Main St,GB,,,',
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const { location, address } = result.row;
    expect(location.normal).toEqual([undefined, null, undefined, undefined, undefined, undefined, undefined]);
    expect(location.links).toEqual({ website_url: null });
    expect(location.phones).toEqual({});
    expect(location.year_established).toBeNull();
    expect('description' in location).toBe(false);
    expect('special' in location).toBe(false);
    expect(address).toEqual({ country_code: 'GB', line1: '1 Main St' });
  });

  it('reads a row of a sheet without name, address line 1 or country: only what it has', () => {
    const result = one('Store code,Primary phone,Administrative area\nP-1,+1 512 555 0100,TX');
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const { location, address, org } = result.row;
    expect(org).toEqual({ businessName: '', country: '' });
    expect('name' in location).toBe(false);
    expect(location.phones).toEqual({ default: '+1 512 555 0100' });
    // No country to read the area by: the merge reads it with the stored country.
    expect(address).toEqual({ area: 'TX' });
    const stored = {
      line1: '1 Congress Ave',
      city: 'Austin',
      state: 'Nevada',
      state_code: 'NV',
      country_code: 'US',
    };
    expect(mergeAddress(address, stored)).toEqual({
      line1: '1 Congress Ave',
      line2: null,
      line3: null,
      city: 'Austin',
      sublocality: null,
      state: 'Texas',
      state_code: 'TX',
      zip: null,
      country_code: 'US',
    });
  });

  it('turns US state codes and names into state and state_code, and keeps Irish counties as names', () => {
    expect(regionOf('TX', 'US')).toEqual({ state: 'Texas', state_code: 'TX' });
    expect(regionOf('tx', 'US')).toEqual({ state: 'Texas', state_code: 'TX' });
    expect(regionOf('New York', 'US')).toEqual({ state: 'New York', state_code: 'NY' });
    expect(regionOf('Co. Dublin', 'IE')).toEqual({ state: 'Co. Dublin', state_code: null });
    expect(regionOf('County  Cork', 'IE')).toEqual({ state: 'County Cork', state_code: null });
    expect(regionOf('', 'GB')).toEqual({ state: null, state_code: null });
    const us = one(
      'Store code,Business name,Address line 1,Administrative area,Country / Region,Postal code\n12,Lone Star Tacos,200 Congress Ave,TX,US,78701',
    );
    expect(us.ok && us.row.address).toMatchObject({
      state: 'Texas',
      state_code: 'TX',
      zip: '78701',
      country_code: 'US',
    });
    const ie = one(
      'Store code,Business name,Address line 1,Administrative area,Country\nD1,Liffey Books,3 Quay St,Co. Dublin,ie',
    );
    expect(ie.ok && ie.row.address).toMatchObject({
      state: 'Co. Dublin',
      state_code: null,
      country_code: 'IE',
    });
  });

  it('reads the Org columns and joins address lines 3 to 5', () => {
    const result = one(
      'Store code,Business name,Address line 1,Address line 3,Address line 4,Address line 5,Country,Org domain,Company number\nS1,Acme,1 High St,Unit 2,,Riverside Park,GB,acme.bizdir.test,09876543',
    );
    expect(result.ok && result.row.org).toEqual({
      businessName: 'Acme',
      country: 'GB',
      orgDomain: 'acme.bizdir.test',
      companyNumber: '09876543',
    });
    expect(result.ok && result.row.address.line3).toBe('Unit 2, Riverside Park');
  });

  it('refuses rows without store code, name or country, and rows with bad hours, naming the column', () => {
    const head = 'Store code,Business name,Address line 1,Country / Region,Tuesday hours,Special hours';
    const cases: [string, string, RegExp][] = [
      [',Acme,1 Main St,GB,,', 'Store code', /store code is empty/],
      ['A1, ,1 Main St,GB,,', 'Business name', /business name is empty/],
      ['A1,Acme,1 Main St,,,', 'Country / Region', /country is empty/],
      ['A1,Acme,1 Main St,Britain,,', 'Country / Region', /not an ISO 3166/],
      ['A1,Acme,1 Main St,GB,9 till 5,', 'Tuesday hours', /not a range/],
      ['A1,Acme,1 Main St,GB,,2026-02-30: x', 'Special hours', /not a real date/],
    ];
    for (const [row, column, reason] of cases) {
      const result = one(`${head}\n${row}`);
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect(result.issue.column).toBe(column);
      expect(result.issue.reason).toMatch(reason);
    }
    const badHours = one(`${head}\nA1,Acme,1 Main St,GB,9 till 5,`);
    expect(!badHours.ok && badHours.key?.code).toBe('A1');
  });

  it('loads a bad optional value as empty and reports it', () => {
    const result = one(
      'Store code,Business name,Address line 1,Country,Opening date,Website,Latitude\nA1,Acme,1 Main St,GB,2019-02-30,not a url,91',
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.row.location.year_established).toBeNull();
    expect(result.row.location.links.website_url).toBeNull();
    expect(result.row.location.latitude).toBeNull();
    expect(result.warnings.map((w) => w.column)).toEqual(['Website', 'Opening date', 'Latitude']);
  });

  it('reads opening dates and web addresses leniently but not wrongly', () => {
    expect(yearOf('1962-05')).toBe(1962);
    expect(yearOf('2019-05-14')).toBe(2019);
    expect(yearOf('2019')).toBe(2019);
    expect(yearOf('05/2019')).toBeNull();
    expect(yearOf('2019-13')).toBeNull();
    expect(urlOf('example.com/shop')).toBe('https://example.com/shop');
    expect(urlOf('http://example.com')).toBe('http://example.com');
    expect(urlOf('ftp://example.com')).toBeNull();
    expect(urlOf('n/a')).toBeNull();
  });
});

describe('location feed options', () => {
  it('takes --org and --full, checks --country, and keeps registrar-only options out', () => {
    expect(locationsFeed.parseOptions({ org: ' 09876543 ', full: true })).toEqual({
      org: '09876543',
      full: true,
    });
    expect(locationsFeed.parseOptions({ country: 'gb' })).toEqual({ full: false, country: 'GB' });
    expect(() => locationsFeed.parseOptions({ country: 'XX' })).toThrow(ImportOptionsError);
    expect(() => locationsFeed.parseOptions({ org: '  ' })).toThrow(/--org needs/);
    expect(locationsFeed.lockKey({})).toBe('locations');
  });
});
