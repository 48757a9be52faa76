import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, keysOf, newAccount, postJson, startTestApi } from './support/api.js';
import { createTestDb, type TestDb } from './support/db.js';
import { importFeed } from './support/import.js';
import { testQueuePrefix } from './support/redis.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';

// Field lists written out from the API contract (the API description, kept outside this repository)
// and the field names it leaves open (docs/decisions.md, Response shape), not from the code.
const REQUEST_FIELDS = [
  'id',
  'success',
  'period_start',
  'next_period_start',
  'requests_this_period',
  'credit_available_this_period',
  'credit_used_this_request',
  'credit_used_this_period',
  'credit_remaining_this_period',
  'account_id',
  'subscription_id',
].sort();
const ORG_FIELDS = [
  'description',
  'domain',
  'emails',
  'industry',
  'informal_name',
  'locations',
  'logo_url',
  'name',
  'phones',
  'public_domain',
  'registration',
  'updated',
  'version_number',
  'vat',
].sort();
const REGISTRATION_FIELDS = ['country_code', 'date', 'number', 'state_code', 'address'].sort();
const ADDRESS_FIELDS = [
  'domain',
  'line1',
  'line2',
  'line3',
  'city',
  'sublocality',
  'state',
  'state_code',
  'zip',
  'country_code',
  'version_number',
].sort();
const PHONES_FIELDS = ['default', 'alt', 'local', 'fax', 'mobile', 'free', 'tty'].sort();
const LOCATION_FIELDS = [
  'address',
  'address_verified',
  'code',
  'closed_date',
  'default',
  'description',
  'domain',
  'emails',
  'hours',
  'links',
  'name',
  'org_domain',
  'phones',
  'public_domain',
  'updated',
  'version_number',
  'year_established',
].sort();
const HOURS_FIELDS = ['normal', 'message', 'special', 'special_message'].sort();
const NORMAL_ENTRY_FIELDS = ['day', 'open', 'open_time', 'close_time'].sort();
const SPECIAL_ENTRY_FIELDS = ['date', 'open', 'open_time', 'close_time'].sort();
const LINKS_FIELDS = [
  'socialnet_url',
  'photoshare_url',
  'professionalnet_url',
  'shortvideo_url',
  'microblog_url',
  'website_url',
  'videosite_url',
].sort();

type Dict = Record<string, unknown>;
/** The parts of the bodies the assertions below read by name. */
interface LocationBody extends Dict {
  domain: string;
  public_domain: string;
  default: boolean;
  org_domain: string;
  address: Dict;
  hours: { normal: Dict[] };
  links: { website_url: string | null };
}
interface OrgBody extends Dict {
  domain: string;
  name: string;
  informal_name: string | null;
  version_number: number;
  industry: { sic_code: string | null };
  registration: { number: string | null; address: Dict & { domain: string; line1: string | null } };
  locations: { count: number; default: LocationBody };
}

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const nullOr = (type: string) => (v: unknown) => v === null || typeof v === type;

function expectAddress(a: Record<string, unknown>) {
  expect(keysOf(a)).toEqual(ADDRESS_FIELDS);
  for (const k of ADDRESS_FIELDS.filter((f) => f !== 'version_number'))
    expect(nullOr('string')(a[k]), k).toBe(true);
  expect(nullOr('number')(a.version_number)).toBe(true);
}

function expectRequest(r: Record<string, unknown>) {
  expect(keysOf(r)).toEqual(REQUEST_FIELDS);
  expect(typeof r.id).toBe('string');
  expect(r.success).toBe(true);
  expect(r.period_start).toMatch(ISO_UTC);
  expect(r.next_period_start).toMatch(ISO_UTC);
  for (const k of REQUEST_FIELDS.filter((f) => f.startsWith('credit_') || f === 'requests_this_period')) {
    expect(Number.isInteger(r[k]), k).toBe(true);
  }
  expect(typeof r.account_id).toBe('string');
  expect(typeof r.subscription_id).toBe('string');
}

function expectLocation(l: Record<string, unknown>) {
  expect(keysOf(l)).toEqual(LOCATION_FIELDS);
  expectAddress(l.address as Record<string, unknown>);
  expect(typeof l.address_verified).toBe('boolean');
  expect(typeof l.default).toBe('boolean');
  expect(l.domain).toMatch(/^[a-z0-9]+\.loc\.[a-z]{2}\.bizdir\.test$/);
  expect(l.public_domain).toMatch(/^[a-z0-9-]+\.loc\.bizdir\.test$/);
  expect(l.org_domain).toMatch(/^[a-z0-9]+\.[a-z]{2}\.bizdir\.test$/);
  expect(keysOf(l.emails)).toEqual(['default']);
  expect(keysOf(l.phones)).toEqual(PHONES_FIELDS);
  expect(keysOf(l.links)).toEqual(LINKS_FIELDS);
  const hours = l.hours as { normal: object[]; special: object[] };
  expect(keysOf(hours)).toEqual(HOURS_FIELDS);
  for (const e of hours.normal) expect(keysOf(e)).toEqual(NORMAL_ENTRY_FIELDS);
  for (const e of hours.special) expect(keysOf(e)).toEqual(SPECIAL_ENTRY_FIELDS);
  expect(l.updated).toMatch(ISO_UTC);
  expect(Number.isInteger(l.version_number)).toBe(true);
  expect(nullOr('number')(l.year_established)).toBe(true);
  expect(l.closed_date === null || DATE.test(String(l.closed_date))).toBe(true);
}

function expectOrg(o: Record<string, unknown>) {
  expect(keysOf(o)).toEqual(ORG_FIELDS);
  expect(o.domain).toMatch(/^[a-z0-9]+\.[a-z]{2}\.bizdir\.test$/);
  expect(o.public_domain).toMatch(/^[a-z0-9-]+\.bizdir\.test$/);
  expect(keysOf(o.emails)).toEqual(['default']);
  expect(keysOf(o.industry)).toEqual(['sic_code']);
  expect(keysOf(o.vat)).toEqual(['number']);
  expect(keysOf(o.phones)).toEqual(PHONES_FIELDS);
  expect(keysOf(o.locations)).toEqual(['count', 'default']);
  const registration = o.registration as Record<string, unknown>;
  expect(keysOf(registration)).toEqual(REGISTRATION_FIELDS);
  expectAddress(registration.address as Record<string, unknown>);
  expect(o.updated).toMatch(ISO_UTC);
  expect(Number.isInteger(o.version_number)).toBe(true);
}

const LOCATIONS_CSV = [
  'Store code,Business name,Address line 1,Locality,Country / Region,Postal code,Primary phone,Website,Monday hours,Tuesday hours,Special hours,Opening date,Company number,Socialnet URL',
  'HL-2,Harbour Light Analytics,9 Dock Road,Bristol,GB,BS1 5AA,+44 117 000 0002,https://hla.example/2,09:00-17:00,x,,2015-01,09876543,',
  'HL-1,Harbour Light Analytics,2nd Floor 7 Quay Street,Bristol,GB,BS1 4DB,+44 117 000 0001,https://hla.example,09:00-17:00,"09:00-12:00, 13:00-17:00",2026-12-25: x,2016-03,09876543,https://socialnet.example/hla',
  'CC-1,Corner Cafe,1 Market Square,York,GB,YO1 8AA,,,,,,,,',
].join('\n');

describe('API contract (records loaded through the real importers)', () => {
  let t: TestDb;
  let app: FastifyInstance;
  let key: string;
  const redis = testQueuePrefix();

  beforeAll(async () => {
    t = await createTestDb();
    const dir = mkdtempSync(path.join(tmpdir(), 'bizdir-api-'));
    const registrar = path.join(dir, 'registrar.csv');
    writeFileSync(
      registrar,
      registrarCsv([
        registrarFields('09876543', 'HARBOUR LIGHT ANALYTICS LIMITED', {
          'RegAddress.AddressLine1': '2ND FLOOR, 7 QUAY STREET',
          'RegAddress.PostTown': 'BRISTOL',
          'RegAddress.PostCode': 'BS1 4DB',
        }),
        registrarFields('01234567', 'ACME WIDGETS LTD'),
      ]),
    );
    await importFeed(t.db, 'registrar', registrar, { country: 'GB' });
    const locations = path.join(dir, 'locations.csv');
    writeFileSync(locations, LOCATIONS_CSV);
    await importFeed(t.db, 'locations', locations, { country: 'GB' });
    // A rename: the Org keeps its stable domain; its old public domain still resolves.
    writeFileSync(registrar, registrarCsv([registrarFields('01234567', 'ACME GADGETS LTD')]));
    await importFeed(t.db, 'registrar', registrar, { country: 'GB' });
    rmSync(dir, { recursive: true, force: true });
    app = await startTestApi({ databaseUrl: t.url, prefix: redis.prefix });
    key = (await newAccount(t.db)).api_key;
  });

  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await redis.cleanup();
  });

  it('GET /v1/org/{domain}: every field of the Org, with the registered address', async () => {
    const { status, body, headers } = await get(
      app,
      '/v1/org/harbour-light-analytics-limited.bizdir.test',
      key,
    );
    expect(status).toBe(200);
    expect(keysOf(body)).toEqual(['org', 'request']);
    const org = body.org as OrgBody;
    expectOrg(org);
    expectRequest(body.request as Record<string, unknown>);
    expect(headers['x-request-id']).toBe((body.request as { id: string }).id);
    expect(org.name).toBe('HARBOUR LIGHT ANALYTICS LIMITED');
    expect(org.informal_name).toBe('HARBOUR LIGHT ANALYTICS');
    expect(org.industry.sic_code).toBe('62020');
    expect(org.registration).toMatchObject({ country_code: 'GB', number: '09876543', date: '2016-03-14' });
    expect(org.registration.address).toMatchObject({
      line1: '2ND FLOOR, 7 QUAY STREET',
      zip: 'BS1 4DB',
      country_code: 'GB',
    });
    expect(org.registration.address.domain).toMatch(/\.a\.gb\.bizdir\.test$/);
    expect(org.locations.count).toBe(2);
    expectLocation(org.locations.default);
    expect(org.locations.default.default).toBe(true);
    expect(org.locations.default.org_domain).toBe(org.domain);

    // The stable domain, in any case, names the same Org.
    const byStable = await get(app, `/v1/org/${org.domain.toUpperCase()}`, key);
    expect(byStable.status).toBe(200);
    expect((byStable.body.org as { domain: string }).domain).toBe(org.domain);
  });

  it('GET /v1/org/{domain}: an Org without Locations has locations.default null; old public domains resolve', async () => {
    const renamed = await get(app, '/v1/org/acme-gadgets-ltd.bizdir.test', key);
    expect(renamed.status).toBe(200);
    const org = renamed.body.org as OrgBody;
    expectOrg(org);
    expect(org.locations).toEqual({ count: 0, default: null });
    expect(org.version_number).toBe(2);
    const old = await get(app, '/v1/org/acme-widgets-ltd.bizdir.test', key);
    expect(old.status).toBe(200);
    expect((old.body.org as { domain: string }).domain).toBe(org.domain);
  });

  it('GET /v1/org/{domain}: an Org with no registrar record shows its default Location address', async () => {
    const { status, body } = await get(app, '/v1/org/corner-cafe.bizdir.test', key);
    expect(status).toBe(200);
    const org = body.org as OrgBody;
    expectOrg(org);
    expect(org.registration.number).toBeNull();
    expect(org.registration.address.line1).toBe('1 Market Square');
    expect(org.registration.address).toEqual(org.locations.default.address);
  });

  it('GET /v1/org/{domain}/locations: default first, then by name; exact total under pagination', async () => {
    const all = await get(app, '/v1/org/harbour-light-analytics-limited.bizdir.test/locations', key);
    expect(all.status).toBe(200);
    expect(keysOf(all.body)).toEqual(['locations', 'request']);
    const list = all.body.locations as { total: number; results: LocationBody[] };
    expect(keysOf(list)).toEqual(['results', 'total']);
    expect(list.total).toBe(2);
    for (const l of list.results) expectLocation(l);
    expect(list.results[0]!.default).toBe(true);
    expectRequest(all.body.request as Record<string, unknown>);

    const page = await get(
      app,
      '/v1/org/harbour-light-analytics-limited.bizdir.test/locations?limit=1&offset=1',
      key,
    );
    const second = page.body.locations as { total: number; results: { domain: string }[] };
    expect(second.total).toBe(2);
    expect(second.results.map((l) => l.domain)).toEqual([list.results[1]!.domain]);

    const bad = await get(
      app,
      '/v1/org/harbour-light-analytics-limited.bizdir.test/locations?limit=101',
      key,
    );
    expect(bad).toMatchObject({
      status: 400,
      body: { code: 400, message: 'Bad Request: limit must be an integer between 1 and 100' },
    });
    const window = await get(
      app,
      '/v1/org/harbour-light-analytics-limited.bizdir.test/locations?offset=9950&limit=100',
      key,
    );
    expect(window.body).toEqual({ code: 400, message: 'Bad Request: offset + limit must be at most 10000' });
    const none = await get(app, '/v1/org/no-such-org.bizdir.test/locations', key);
    expect(none.body).toEqual({ code: 404, message: 'Not Found: No Org exists for this domain' });
  });

  it('GET /v1/location/{domain}: every field, by stable and by public domain', async () => {
    const list = await get(app, '/v1/org/harbour-light-analytics-limited.bizdir.test/locations', key);
    const first = (list.body.locations as { results: LocationBody[] }).results[0]!;
    for (const domain of [first.domain, first.public_domain]) {
      const { status, body } = await get(app, `/v1/location/${domain}`, key);
      expect(status).toBe(200);
      expect(keysOf(body)).toEqual(['location', 'request']);
      expectLocation(body.location as Record<string, unknown>);
      expectRequest(body.request as Record<string, unknown>);
      expect(body.location).toEqual(first);
    }
    expect(first.hours.normal.length).toBeGreaterThan(0);
    expect(first.links.website_url).toMatch(/^https:\/\/hla\.example/);
    const none = await get(app, '/v1/location/zzzzzzzz.loc.gb.bizdir.test', key);
    expect(none.body).toEqual({ code: 404, message: 'Not Found: No Location exists for this domain' });
    const wrongSuffix = await get(
      app,
      `/v1/location/${first.domain.replace('bizdir.test', 'example.com')}`,
      key,
    );
    expect(wrongSuffix.status).toBe(404);
  });

  it('POST /v1/contact: {contact: {created, id}, request}', async () => {
    const { status, body } = await postJson(app, '/v1/contact', key, {
      full_name: 'Ada Lovelace',
      email: 'ada@example.com',
    });
    expect(status).toBe(200);
    expect(keysOf(body)).toEqual(['contact', 'request']);
    expect(keysOf(body.contact)).toEqual(['created', 'id']);
    expect(body.contact).toMatchObject({ created: true, id: expect.any(String) });
    expectRequest(body.request as Record<string, unknown>);
  });

  it('serves the OpenAPI document with every endpoint, and /docs', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, object>;
    };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/org/{domain}',
        '/v1/org/{domain}/locations',
        '/v1/location/{domain}',
        '/v1/contact',
      ]),
    );
    const docs = await app.inject({ method: 'GET', url: '/docs' });
    expect([200, 302]).toContain(docs.statusCode);
  });
});
