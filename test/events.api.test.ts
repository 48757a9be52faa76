import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { companyNumberOf, MAX_WATCH } from '../api/events/watch.read-model.js';
import { pruneEvents } from '../events/retention.repository.js';
import { normalizeCompanyNumber } from '../ingest/registrar/registrar.normalize.js';
import { creditsUsed, get, newAccount, SUFFIX, useTestApi } from './support/api.js';
import { tempFile } from './support/events.js';
import { importFeed } from './support/import.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';

/**
 * GET /v1/events through the real app: pages and cursors, filters, bad input, credits (a page with
 * events costs one, an empty page none), 410 after retention, and the long poll.
 */
const NUMBERS = ['02000001', '02000002', '02000003'];
const register = (names: readonly string[]) =>
  tempFile('register.csv', registrarCsv(NUMBERS.map((n, i) => registrarFields(n, names[i]!))));

const api = useTestApi({
  seed: async (t) => {
    await importFeed(
      t.db,
      'registrar',
      register(['HARBOUR ONE LTD', 'HARBOUR TWO LTD', 'HARBOUR THREE LTD']),
    );
    await importFeed(
      t.db,
      'locations',
      tempFile(
        'sheet.csv',
        `Store code,Business name,Address line 1,Locality,Country / Region,Company number\r\nH-1,Harbour One,1 Quay,Hull,GB,${NUMBERS[0]}\r\n`,
      ),
    );
  },
  credits: 1_000,
});

interface Page {
  events: { id: string; type: string; created: string; data: Record<string, unknown> }[];
  next_cursor: string | null;
  has_more: boolean;
  request: { credit_used_this_request: number };
}
const events = async (query = '', key = api.key) => {
  const res = await get(api.app, `/v1/events${query ? `?${query}` : ''}`, key);
  return { status: res.status, body: res.body as unknown as Page };
};
const subscriptionOf = async (key: string) => {
  const { body } = await get(api.app, '/v1/usage', key);
  return (body.request as { subscription_id: string }).subscription_id;
};

describe('GET /v1/events', () => {
  it('pages through the feed with cursors; each page with events costs one credit', async () => {
    const all = await events('limit=1000');
    expect(all.status).toBe(200);
    expect(all.body.events.map((e) => e.type)).toEqual([
      'import.started',
      ...NUMBERS.flatMap(() => ['org.created', 'address.created']),
      'import.completed',
      'import.started',
      'location.created',
      'address.created',
      'import.completed',
    ]);
    expect(all.body.has_more).toBe(false);
    expect(all.body.next_cursor).toBe(all.body.events.at(-1)!.id);
    expect(all.body.request.credit_used_this_request).toBe(1);
    const org = all.body.events[1]!;
    expect(org).toEqual({
      id: expect.stringMatching(/^\d+-\d+$/),
      type: 'org.created',
      created: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      data: {
        domain: expect.stringMatching(new RegExp(`^[0-9a-z]{8}\\.gb\\.${SUFFIX.replace('.', '\\.')}$`)),
        public_domain: `harbour-one-ltd.${SUFFIX}`,
        version_number: 1,
      },
    });
    // The Org an event names is the one the API serves under that domain.
    const served = await get(api.app, `/v1/org/${org.data.domain as string}`, api.key);
    expect(served.body.org).toMatchObject({ name: 'HARBOUR ONE LTD', version_number: 1 });

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    for (;;) {
      const page = await events(`limit=3${cursor ? `&after=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.events.map((e) => e.id));
      pages++;
      cursor = page.body.next_cursor;
      if (!page.body.has_more) break;
    }
    expect(seen).toEqual(all.body.events.map((e) => e.id));
    expect(pages).toBe(Math.ceil(all.body.events.length / 3));
  });

  it('an empty page costs nothing, even when the period is spent; a page with events then is 402', async () => {
    const account = await newAccount(api.t.db, 1);
    const sub = await subscriptionOf(account.api_key);
    const first = await events('limit=1', account.api_key);
    expect(first.body.request.credit_used_this_request).toBe(1);
    const end = (await events('limit=1000')).body.next_cursor!;
    const empty = await events(`after=${end}`, account.api_key);
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({ events: [], next_cursor: end, has_more: false });
    expect(empty.body.request).toMatchObject({
      credit_used_this_request: 0,
      credit_used_this_period: 1,
      credit_remaining_this_period: 0,
    });
    expect(await creditsUsed(api.t.db, sub)).toBe(1);
    const spent = await events(`after=${first.body.next_cursor}`, account.api_key);
    expect(spent.status).toBe(402);
    expect(spent.body).toEqual({ code: 402, message: expect.stringMatching(/^Payment Required: /) });
    expect(await creditsUsed(api.t.db, sub)).toBe(1);
  });

  it('filters by type (exact or kind.*) on the server; unknown types are 400', async () => {
    const orgs = await events('types=org.*');
    expect(new Set(orgs.body.events.map((e) => e.type))).toEqual(new Set(['org.created']));
    expect(orgs.body.events).toHaveLength(3);
    const mixed = await events('types=location.created,import.completed');
    expect(mixed.body.events.map((e) => e.type)).toEqual([
      'import.completed',
      'location.created',
      'import.completed',
    ]);
    const none = await events('types=location.closed');
    expect(none.body).toMatchObject({ events: [], has_more: false });
    expect(none.body.request.credit_used_this_request).toBe(0);
    for (const bad of ['org.deleted', 'orgs.*', 'org.*,', '*']) {
      const res = await events(`types=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(400);
      expect(res.body).toEqual({ code: 400, message: expect.stringMatching(/^Bad Request: types/) });
    }
  });

  it('watches Orgs by company number or domain: their own events and their Locations’ and Addresses’', async () => {
    const all = (await events('limit=1000')).body.events;
    const one = all.find((e) => e.data.public_domain === `harbour-one-ltd.${SUFFIX}`)!;
    const about = (domain: unknown) =>
      all.filter((e) => e.data.domain === domain || e.data.org_domain === domain).map((e) => e.id);
    const expected = about(one.data.domain);
    expect(expected).toHaveLength(4);
    for (const watch of [NUMBERS[0]!, '2000001', one.data.domain as string, `harbour-one-ltd.${SUFFIX}`]) {
      const page = await events(`watch=${encodeURIComponent(watch)}`);
      expect(
        page.body.events.map((e) => e.id),
        watch,
      ).toEqual(expected);
    }
    const two = await events(`watch=${NUMBERS[0]},${NUMBERS[1]}&types=org.created`);
    expect(two.body.events).toHaveLength(2);
    for (const bad of [
      '09999999',
      `no-such-org.${SUFFIX}`,
      'not a number!',
      `abcdefgh.loc.gb.${SUFFIX}`,
      'acme.example.com',
      Array.from({ length: MAX_WATCH + 1 }, () => NUMBERS[0]).join(','),
    ]) {
      const res = await events(`watch=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(400);
      expect(res.body).toEqual({ code: 400, message: expect.stringMatching(/^Bad Request: watch/) });
    }
  });

  it('reads company numbers as the register writes them', () => {
    for (const n of ['1234', 'sc12345', ' 01 234567 ', 'SC012345', 'ni000123', '123456789', 'A-1', ''])
      expect(companyNumberOf(n), n).toBe(normalizeCompanyNumber(n));
  });

  it('bad input is 400 with the error object', async () => {
    for (const query of [
      'after=abc',
      'after=12',
      'after=1-2-3',
      'limit=0',
      'limit=1001',
      'limit=ten',
      'wait=31',
      'wait=-1',
      'wait=1.5',
    ]) {
      const res = await events(query);
      expect(res.status, query).toBe(400);
      expect(res.body, query).toEqual({ code: 400, message: expect.stringMatching(/^Bad Request: .+/) });
    }
  });

  it('a cursor older than what is kept is 410, saying how to start again', async () => {
    const first = (await events('limit=1')).body.events[0]!;
    await sql`update events set created = now() - interval '60 days' where (xid::text || '-' || seq) = ${first.id}`.execute(
      api.t.db,
    );
    const pruned = await pruneEvents(api.t.db, { retentionDays: 45 });
    expect(pruned.deleted).toBe(1);
    const res = await events('after=1-1');
    expect(res.status).toBe(410);
    expect(res.body).toEqual({
      code: 410,
      message: expect.stringMatching(/^Gone: .*kept 45 days.*without `after`/),
    });
    // At the last deleted event, or without `after`, reading goes on.
    expect((await events(`after=${first.id}`)).status).toBe(200);
    const fromOldest = await events('limit=1');
    expect(fromOldest.body.events[0]!.id).not.toBe(first.id);
  });

  it('documents the route, its credits and its 410 in the OpenAPI document', async () => {
    const doc = (await api.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<
        string,
        { get: { description: string; responses: Record<string, unknown>; parameters: { name: string }[] } }
      >;
    };
    const op = doc.paths['/v1/events']!.get;
    expect(op.description).toMatch(
      /a page holding at least one event costs 1 data credit; an empty page costs none/,
    );
    expect(Object.keys(op.responses)).toEqual(
      expect.arrayContaining(['200', '400', '402', '403', '410', '429']),
    );
    expect(op.parameters.map((p) => p.name)).toEqual(
      expect.arrayContaining(['after', 'limit', 'types', 'watch', 'wait']),
    );
  });
});

describe('long poll (wait)', () => {
  it('holds an empty page open until an event arrives, then answers with it', async () => {
    const end = (await events('limit=1000')).body.next_cursor!;
    const started = Date.now();
    const waiting = events(`after=${end}&wait=20`);
    await new Promise((r) => setTimeout(r, 400));
    await importFeed(
      api.t.db,
      'registrar',
      tempFile('one.csv', registrarCsv([registrarFields('02000009', 'LATE ARRIVAL LTD')])),
    );
    const page = await waiting;
    const elapsed = Date.now() - started;
    expect(page.status).toBe(200);
    // The first event to arrive is the import's start; the page holds what was visible when it woke.
    expect(page.body.events[0]!.type).toBe('import.started');
    expect(page.body.request.credit_used_this_request).toBe(1);
    expect(elapsed).toBeGreaterThanOrEqual(400);
    expect(elapsed).toBeLessThan(10_000);
  });

  it('answers an empty page, free, after `wait` seconds when nothing arrives', async () => {
    const end = (await events('limit=1000')).body.next_cursor!;
    const started = Date.now();
    const page = await events(`after=${end}&wait=1`);
    const elapsed = Date.now() - started;
    expect(page.body).toMatchObject({ events: [], next_cursor: end, has_more: false });
    expect(page.body.request.credit_used_this_request).toBe(0);
    expect(elapsed).toBeGreaterThanOrEqual(1_000);
    expect(elapsed).toBeLessThan(5_000);
  });

  it('a filtered long poll ignores events it filters out and answers with the first that matches', async () => {
    const end = (await events('limit=1000')).body.next_cursor!;
    const waiting = events(`after=${end}&wait=20&types=org.updated`);
    await new Promise((r) => setTimeout(r, 300));
    // A new company (org.created: filtered out), then a rename (org.updated).
    await importFeed(
      api.t.db,
      'registrar',
      tempFile('a.csv', registrarCsv([registrarFields('02000010', 'NEW CO LTD')])),
    );
    await new Promise((r) => setTimeout(r, 300));
    await importFeed(
      api.t.db,
      'registrar',
      tempFile('b.csv', registrarCsv([registrarFields('02000010', 'NEW NAME LTD')])),
    );
    const page = await waiting;
    expect(page.body.events.map((e) => [e.type, e.data.changed])).toEqual([
      ['org.updated', ['informal_name', 'name', 'public_domain']],
    ]);
  });

  it('the app closing answers waiting requests at once', async () => {
    const end = (await events('limit=1000')).body.next_cursor!;
    const started = Date.now();
    const waiting = events(`after=${end}&wait=30`);
    await new Promise((r) => setTimeout(r, 300));
    await api.app.close();
    const page = await waiting;
    expect(page.status).toBe(200);
    expect(page.body.events).toEqual([]);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
