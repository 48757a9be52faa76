import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import { matchLocationHeaders } from '../ingest/locations/locations.headers.js';
import { normalizeLocationRow } from '../ingest/locations/locations.normalize.js';
import {
  type AddressContent,
  contentHash,
  encodeLocation,
  type LocationContent,
  mergeAddress,
  mergeLocation,
  type StoredLocation,
} from '../ingest/locations/locations.records.js';
import type { HoursEntryJson } from '../shared/tables.js';

/**
 * Content hashes and encoded texts are stored in Postgres. If any of them changed for the same
 * content, the next import would see every stored Location as changed and bump its version. These
 * values were captured from the code as it was before the per-row speed work; they must never move.
 */

const NULL_PHONES = { default: null, alt: null, local: null, fax: null, mobile: null, free: null, tty: null };
const NULL_LINKS = {
  socialnet_url: null,
  photoshare_url: null,
  professionalnet_url: null,
  shortvideo_url: null,
  microblog_url: null,
  website_url: null,
  videosite_url: null,
};

const QUAYSIDE: LocationContent = {
  name: 'Quayside Hardware',
  description: 'Family-run hardware shop on the harbour since 1962.',
  phones: { ...NULL_PHONES, default: '+44 1947 600123', alt: '+44 1947 600124' },
  hours: {
    normal: [
      { day: 0, open: false, open_time: '00:00', close_time: '00:00' },
      { day: 1, open: true, open_time: '08:30', close_time: '17:30' },
      { day: 6, open: true, open_time: '09:00', close_time: '12:30' },
      { day: 6, open: true, open_time: '13:30', close_time: '16:00' },
    ],
    special: [
      { date: '2026-12-24', open: true, open_time: '08:30', close_time: '13:00' },
      { date: '2026-12-25', open: false, open_time: '00:00', close_time: '00:00' },
    ],
    message: null,
    special_message: null,
  },
  links: { ...NULL_LINKS, website_url: 'https://quayside.example.co.uk/whitby' },
  year_established: 1962,
  latitude: 54.4858,
  longitude: -0.6149,
  primary_category: 'Hardware store',
  categories: ['Garden center', 'Key duplication service'],
  labels: ['Yorkshire', 'Coast'],
  logo_url: 'https://cdn.quayside.example.co.uk/logo.png',
};

const CAFE: LocationContent = {
  name: 'Café "Zoë" & Søn',
  description: 'Line one,\nline two "quoted" \\ back\u2028slash\ttab\u0001',
  phones: { ...NULL_PHONES, default: '0049 351 000' },
  hours: {
    normal: null,
    special: null,
    message: 'Ring the bell',
    special_message: 'Zu Weihnachten geschlossen',
  },
  links: { ...NULL_LINKS },
  year_established: null,
  latitude: null,
  longitude: null,
  primary_category: null,
  categories: ['Bäckerei', 'a "quoted" \\ item'],
  labels: null,
  logo_url: null,
};

const RAMEN: LocationContent = {
  name: '東京ラーメン 🍜',
  description: null,
  phones: { ...NULL_PHONES },
  hours: {
    normal: [{ day: 3, open: true, open_time: '18:00', close_time: '02:00' }],
    special: null,
    message: null,
    special_message: null,
  },
  links: { ...NULL_LINKS, socialnet_url: 'https://social.example/x?y=1&z="2"' },
  year_established: 2001,
  latitude: 0,
  longitude: -0.5,
  primary_category: 'Ramen',
  categories: [],
  labels: ['', ','],
  logo_url: null,
};

const ADDRESSES: [AddressContent, string][] = [
  [
    {
      line1: '14 Harbour Row',
      line2: null,
      line3: null,
      city: 'Whitby',
      sublocality: 'Old Town',
      state: null,
      state_code: null,
      zip: 'YO21 3PU',
      country_code: 'GB',
    },
    'Al5HXiWdTEtPaNUVfH8vEg',
  ],
  [
    {
      line1: 'Straße 1',
      line2: 'Hinterhaus "B"',
      line3: 'Unit 2, Riverside Park',
      city: 'Dresden',
      sublocality: null,
      state: 'Sachsen',
      state_code: null,
      zip: '01067',
      country_code: 'DE',
    },
    'X0A1t0CU53sg4StJSqHzog',
  ],
  [
    {
      line1: '200 Congress Ave',
      line2: null,
      line3: null,
      city: 'Austin',
      sublocality: null,
      state: 'Texas',
      state_code: 'TX',
      zip: '78701',
      country_code: 'US',
    },
    'cXsD9Ctest8cA3FKHr3Fxw',
  ],
];

describe('stored content hashes (must never change for the same content)', () => {
  it('encodes and hashes a full Location with split and special hours', () => {
    expect(encodeLocation(QUAYSIDE)).toEqual({
      encoded: {
        phones:
          '{"default":"+44 1947 600123","alt":"+44 1947 600124","local":null,"fax":null,"mobile":null,"free":null,"tty":null}',
        hours:
          '{"normal":[{"day":0,"open":false,"open_time":"00:00","close_time":"00:00"},{"day":1,"open":true,"open_time":"08:30","close_time":"17:30"},{"day":6,"open":true,"open_time":"09:00","close_time":"12:30"},{"day":6,"open":true,"open_time":"13:30","close_time":"16:00"}],"special":[{"date":"2026-12-24","open":true,"open_time":"08:30","close_time":"13:00"},{"date":"2026-12-25","open":false,"open_time":"00:00","close_time":"00:00"}],"message":null,"special_message":null}',
        links:
          '{"socialnet_url":null,"photoshare_url":null,"professionalnet_url":null,"shortvideo_url":null,"microblog_url":null,"website_url":"https://quayside.example.co.uk/whitby","videosite_url":null}',
        categories: '{"Garden center","Key duplication service"}',
        labels: '{"Yorkshire","Coast"}',
      },
      hash: '_BkH40odRiCBBxfWckfmMg',
    });
  });

  it('encodes nulls, quotes, backslashes, line breaks, control and non-ASCII characters', () => {
    expect(encodeLocation(CAFE)).toEqual({
      encoded: {
        phones:
          '{"default":"0049 351 000","alt":null,"local":null,"fax":null,"mobile":null,"free":null,"tty":null}',
        hours:
          '{"normal":null,"special":null,"message":"Ring the bell","special_message":"Zu Weihnachten geschlossen"}',
        links:
          '{"socialnet_url":null,"photoshare_url":null,"professionalnet_url":null,"shortvideo_url":null,"microblog_url":null,"website_url":null,"videosite_url":null}',
        categories: '{"Bäckerei","a \\"quoted\\" \\\\ item"}',
        labels: null,
      },
      hash: 'm6mSD4Qdm-PY4-vmg5lVdQ',
    });
  });

  it('encodes astral characters, zero coordinates, empty lists and empty list items', () => {
    expect(encodeLocation(RAMEN)).toEqual({
      encoded: {
        phones: '{"default":null,"alt":null,"local":null,"fax":null,"mobile":null,"free":null,"tty":null}',
        hours:
          '{"normal":[{"day":3,"open":true,"open_time":"18:00","close_time":"02:00"}],"special":null,"message":null,"special_message":null}',
        links:
          '{"socialnet_url":"https://social.example/x?y=1&z=\\"2\\"","photoshare_url":null,"professionalnet_url":null,"shortvideo_url":null,"microblog_url":null,"website_url":null,"videosite_url":null}',
        categories: '{}',
        labels: '{"",","}',
      },
      hash: 'NifJwSxh9lAvOiyoRuTGig',
    });
  });

  it.each(ADDRESSES)('hashes an Address (%#)', (address, hash) => {
    expect(contentHash(address)).toBe(hash);
  });
});

const SHEET = [
  'Store code,Business name,Address line 1,Address line 2,Address line 3,Address line 4,Address line 5,Sub-locality,Locality,Administrative area,Country / Region,Postal code,Latitude,Longitude,Primary phone,Additional phones,Website,Primary category,Additional categories,Sunday hours,Monday hours,Tuesday hours,Wednesday hours,Thursday hours,Friday hours,Saturday hours,Special hours,From the business,Opening date,Logo photo,Labels',
  'QH-001,Quayside Hardware,14 Harbour Row,,,,,Old Town,Whitby,,GB,YO21 3PU,54.4858,-0.6149,+44 1947 600123,"+44 1947 600124",https://quayside.example.co.uk/whitby,Hardware store,"Garden center, Key duplication service",x,08:30-17:30,08:30-17:30,08:30-17:30,08:30-17:30,08:30-17:30,"13:30-16:00, 09:00-12:30","2026-12-26: x, 2026-12-24: 08:30-13:00, 15:00-16:00, 2026-12-25: x","Family-run ""hardware"" shop,\r\non the harbour since 1962.",1962-05,https://cdn.quayside.example.co.uk/logo.png,"Yorkshire; Coast"',
  '12,Lone Star Tacos,200 Congress Ave,Suite 5,Floor 2,,Rear,,Austin,texas,us,78701,30.2672,-97.7431,(512) 555-0100,"(512) 555-0101, (512) 555-0102",lonestar.example.com/austin,Taco restaurant,,,10:00 AM-06:00 PM,10:00 AM-06:00 PM,6am-11pm,"11:00 AM - 2:00 PM, 5:00 PM - 10:00 PM",18:00-02:00,00:00-24:00,,,2019,not a url,',
  'D1,Café Zoë & Søn,Straße 1,,,,,,Dublin,Co. Dublin,IE,D02 X285,,,,,,,,,,,,,,,,Ünïcödé ☕ — “quotes”,,,',
];

describe('stored content hashes of sheet rows (normalize, merge, encode)', () => {
  const parsed = Papa.parse<string[]>(SHEET.join('\n'), { skipEmptyLines: true });
  const [header, ...rows] = parsed.data;
  const columns = matchLocationHeaders(header!);

  it('hashes new rows as before', () => {
    const hashes = rows.map((cells) => {
      const result = normalizeLocationRow(cells, columns);
      if (!result.ok) throw new Error(result.issue.reason);
      const content = mergeLocation(result.row.location, undefined);
      const address = mergeAddress(result.row.address, undefined);
      return [encodeLocation(content).hash, contentHash(address)];
    });
    expect(hashes).toEqual([
      ['aKTocx4QIGfhK93k7ABGxw', 'Al5HXiWdTEtPaNUVfH8vEg'],
      ['k9jMCr1oVg1Jh_EfxXzpKA', 'lFZfY4aDd4CEcVn06R4F4w'],
      ['m14SXM_hq05qQ4U7aaSpGw', 'vK_lkvXdOoXRcIfrND6s4g'],
    ]);
  });
});

describe('encoding shortcuts give the exact JSON text', () => {
  const parsed = Papa.parse<string[]>(SHEET.join('\n'), { skipEmptyLines: true });
  const [header, ...rows] = parsed.data;
  const columns = matchLocationHeaders(header!);

  it('encodes hours (shared parser entries, remembered texts) as JSON.stringify does, every time', () => {
    for (let round = 0; round < 2; round++) {
      for (const cells of rows) {
        const result = normalizeLocationRow(cells, columns);
        if (!result.ok) throw new Error(result.issue.reason);
        const content = mergeLocation(result.row.location, undefined);
        const { encoded } = encodeLocation(content);
        expect(encoded.hours).toBe(JSON.stringify(content.hours));
        expect(encoded.phones).toBe(JSON.stringify(content.phones));
        expect(encoded.links).toBe(JSON.stringify(content.links));
      }
    }
  });

  it('hashes stored hours read back from jsonb (other key order) like the ones written', () => {
    const result = normalizeLocationRow(rows[0]!, columns);
    if (!result.ok) throw new Error(result.issue.reason);
    const written = mergeLocation(result.row.location, undefined);
    // jsonb hands keys back sorted by length, then bytes.
    const reordered = (e: HoursEntryJson) =>
      Object.fromEntries(
        Object.entries(e).sort(([a], [b]) => a.length - b.length || (a < b ? -1 : 1)),
      ) as unknown as HoursEntryJson;
    const stored: StoredLocation = {
      hours: {
        special_message: null,
        message: null,
        special: written.hours.special!.map(reordered),
        normal: written.hours.normal!.map(reordered),
      },
    };
    const { normal: _normal, special: _special, ...rest } = result.row.location;
    const patch = {
      ...rest,
      normal: [undefined, undefined, undefined, undefined, undefined, undefined, undefined],
    };
    const merged = mergeLocation(patch, stored);
    expect(encodeLocation(merged)).toEqual(encodeLocation(written));
  });
});
