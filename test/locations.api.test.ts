import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, newAccount, SUFFIX, startTestApi } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { importFeed } from './support/import.js';
import { testQueuePrefix } from './support/redis.js';

/**
 * Locations loaded from the sample sheet, read back through the API: every field of a Location as
 * the spec shows it, an Org's Locations list, and what `--full` and re-imports do to them.
 */

type Dict = Record<string, unknown>;
let t: TestDb;
let app: FastifyInstance;
let key: string;
const redis = testQueuePrefix();

beforeAll(async () => {
  t = await createTestDb();
  await importFeed(t.db, 'registrar', 'samples/registrar-sample.csv');
  await importFeed(t.db, 'locations', 'samples/locations-sample.csv');
  app = await startTestApi({ databaseUrl: t.url, prefix: redis.prefix });
  key = (await newAccount(t.db)).api_key;
});
afterAll(async () => {
  await app?.close();
  await redis.cleanup();
  await t?.drop();
});

const location = async (domain: string) => {
  const res = await get(app, `/v1/location/${domain}`, key);
  expect(res.status).toBe(200);
  return res.body.location as Dict;
};

describe('a Location read through the API', () => {
  it('shows every field of the sheet row in the spec shape', async () => {
    const l = await location(`quayside-hardware-whitby.loc.${SUFFIX}`);
    expect(l).toEqual({
      address: {
        domain: expect.stringMatching(new RegExp(`^[a-z0-9]{8}\\.a\\.gb\\.${SUFFIX}$`)),
        line1: '14 Harbour Row',
        line2: null,
        line3: null,
        city: 'Whitby',
        sublocality: 'Old Town',
        state: null,
        state_code: null,
        zip: 'YO21 3PU',
        country_code: 'GB',
        version_number: 1,
      },
      address_verified: false,
      code: 'QH-001',
      closed_date: null,
      default: true,
      description: 'Family-run hardware shop on the harbour since 1962.',
      domain: expect.stringMatching(new RegExp(`^[a-z0-9]{8}\\.loc\\.gb\\.${SUFFIX}$`)),
      emails: { default: null },
      hours: {
        normal: [
          { day: 0, open: false, open_time: '00:00', close_time: '00:00' },
          ...[1, 2, 3, 4, 5].map((day) => ({ day, open: true, open_time: '08:30', close_time: '17:30' })),
          { day: 6, open: true, open_time: '09:00', close_time: '12:30' },
          { day: 6, open: true, open_time: '13:30', close_time: '16:00' },
        ],
        message: null,
        special: [
          { date: '2026-12-24', open: true, open_time: '08:30', close_time: '13:00' },
          { date: '2026-12-25', open: false, open_time: '00:00', close_time: '00:00' },
          { date: '2026-12-26', open: false, open_time: '00:00', close_time: '00:00' },
        ],
        special_message: null,
      },
      links: {
        socialnet_url: 'https://socialnet.example/quaysidehardware',
        photoshare_url: null,
        professionalnet_url: null,
        shortvideo_url: null,
        microblog_url: null,
        website_url: 'https://quayside.example.co.uk/whitby',
        videosite_url: null,
      },
      name: 'Quayside Hardware',
      org_domain: expect.stringMatching(new RegExp(`^[a-z0-9]{8}\\.gb\\.${SUFFIX}$`)),
      phones: {
        default: '+44 1947 600123',
        alt: '+44 1947 600124',
        local: null,
        fax: null,
        mobile: null,
        free: null,
        tty: null,
      },
      public_domain: `quayside-hardware-whitby.loc.${SUFFIX}`,
      updated: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/),
      version_number: 1,
      year_established: 1962,
    });
    // The stable domain names the same Location.
    expect(await location(l.domain as string)).toEqual(l);
  });

  it('shows US state codes, Irish counties, 12-hour hours and non-ASCII names as loaded', async () => {
    const tacos = await location(`lone-star-tacos-austin.loc.${SUFFIX}`);
    expect(tacos.address).toMatchObject({
      state: 'Texas',
      state_code: 'TX',
      zip: '78701',
      country_code: 'US',
    });
    expect((tacos.hours as { normal: Dict[] }).normal[0]).toEqual({
      day: 0,
      open: true,
      open_time: '10:00',
      close_time: '16:00',
    });
    expect(tacos.domain).toMatch(/\.loc\.us\./);
    const books = await location(`liffey-books-dublin.loc.${SUFFIX}`);
    expect(books.address).toMatchObject({ state: 'Co. Dublin', state_code: null, country_code: 'IE' });
    const cafe = await location(`cafe-zoe-son-paris.loc.${SUFFIX}`);
    expect(cafe).toMatchObject({ name: 'Café Zoë & Søn', description: 'Crème brûlée, naturellement.' });
  });
});

describe('an Org and its Locations', () => {
  it('lists a non-registered Org\u2019s Locations and answers with the default Location\u2019s address', async () => {
    const org = await get(app, `/v1/org/quayside-hardware.${SUFFIX}`, key);
    expect(org.status).toBe(200);
    const body = org.body.org as Dict & { locations: { count: number; default: Dict }; registration: Dict };
    expect(body.name).toBe('Quayside Hardware');
    expect(body.locations.count).toBe(3);
    expect(body.locations.default).toMatchObject({ code: 'QH-001', default: true });
    expect(body.registration).toMatchObject({
      number: null,
      address: { line1: '14 Harbour Row', city: 'Whitby', zip: 'YO21 3PU', country_code: 'GB' },
    });
    const list = await get(app, `/v1/org/quayside-hardware.${SUFFIX}/locations`, key);
    expect(list.status).toBe(200);
    const locations = list.body.locations as { total: number; results: Dict[] };
    expect(locations.total).toBe(3);
    expect(locations.results.map((l) => l.code).sort()).toEqual(['QH-001', 'QH-002', 'QH-003']);
    expect(locations.results.filter((l) => l.default).map((l) => l.code)).toEqual(['QH-001']);
  });

  it('lists a registered Org\u2019s Locations linked by company number', async () => {
    const list = await get(app, `/v1/org/glen-orrin-distillers-ltd.${SUFFIX}/locations`, key);
    expect(list.status).toBe(200);
    const locations = list.body.locations as { total: number; results: Dict[] };
    expect(locations.results.map((l) => l.code).sort()).toEqual(['GO-INV', 'GO-VC']);
  });

  it('after --full: a closed Location shows its closed_date and stops counting; re-imports keep domains', async () => {
    const before = await location(`quayside-hardware-scarborough.loc.${SUFFIX}`);
    await importFeed(t.db, 'locations', 'test/fixtures/locations-quayside-full.csv', { full: true });
    const closed = await location(`quayside-hardware-scarborough.loc.${SUFFIX}`);
    expect(closed).toMatchObject({
      domain: before.domain,
      closed_date: new Date().toISOString().slice(0, 10),
      version_number: (before.version_number as number) + 1,
    });
    const org = await get(app, `/v1/org/quayside-hardware.${SUFFIX}`, key);
    expect((org.body.org as { locations: { count: number } }).locations.count).toBe(2);
    await importFeed(t.db, 'locations', 'samples/locations-sample.csv');
    const reopened = await location(before.domain as string);
    expect(reopened).toMatchObject({
      closed_date: null,
      version_number: (before.version_number as number) + 2,
    });
    const again = await get(app, `/v1/org/quayside-hardware.${SUFFIX}`, key);
    expect((again.body.org as { locations: { count: number } }).locations.count).toBe(3);
  });
});
