import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FeedEvent } from '../events/feed.read-model.js';
import { createTestDb, type TestDb } from './support/db.js';
import { expectUnbrokenVersions, feedEvents, lastEventId, recordEvents, tempFile } from './support/events.js';
import { importFeed } from './support/import.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';

/**
 * Every path that changes a record writes its event, in the same transaction, through the triggers of
 * migration 0025: the registrar import (new, changed, renamed, moved, `--full` gone, back again), an
 * unchanged re-import (no event), the location feed (new, changed, moved address, `--full` closed).
 * After each step, every record's events carry its versions 1..n in feed order, none twice.
 */
let t: TestDb;

beforeAll(async () => {
  t = await createTestDb();
});

afterAll(async () => {
  await t?.drop();
});

const A = '01000001';
const B = '01000002';
const C = '01000003';
const D = '01000004';
const E = '01000005';
const company = (number: string, name: string, fields: Parameters<typeof registrarFields>[2] = {}) =>
  registrarFields(number, name, fields);
const base = [
  company(A, 'ALPHA ANCHORS LTD'),
  company(B, 'BRAVO BOATS LTD'),
  company(C, 'CHARLIE CHARTS LTD'),
  company(D, 'DELTA DOCKS LTD'),
];
const register = (rows: ReturnType<typeof company>[]) => tempFile('register.csv', registrarCsv(rows));

/** What a step added to the feed, import brackets included, as [type, data] pairs. */
async function eventsAfter(mark: string | null): Promise<FeedEvent[]> {
  return feedEvents(t.db, {}, mark);
}
const byType = (events: readonly FeedEvent[]) => events.map((e) => e.type);
/** The stable domain of the Org with a company number, computed in Postgres (not by the read model). */
const domainOf = async (number: string) => {
  const { rows } = await sql<{ domain: string }>`
    select bizdir_uid(id) || '.' || domain_cc || '.bizdir.test' as domain from orgs
    where registration_number = ${number}`.execute(t.db);
  return rows[0]!.domain;
};

describe('events of the registrar import', () => {
  let orgDomains: Map<string, string>;

  it('a first import: org.created and address.created for each company, between import.started and import.completed', async () => {
    const run = await importFeed(t.db, 'registrar', register(base));
    const events = await eventsAfter(null);
    expect(byType(events)).toEqual([
      'import.started',
      ...base.flatMap(() => ['org.created', 'address.created']),
      'import.completed',
    ]);
    const [started, ...rest] = events;
    const completed = rest.pop()!;
    expect(started!.data).toEqual({ run_id: run.id, feed: 'registrar', full: false, parts: 1 });
    expect(completed.data).toEqual({
      run_id: run.id,
      feed: 'registrar',
      status: 'succeeded',
      full: false,
      first_id: rest[0]!.id,
      last_id: rest.at(-1)!.id,
      counts: { rows_read: 4, inserted: 4, updated: 0, unchanged: 0, rejected: 0, closed: 0 },
    });
    const org = rest[0]!;
    expect(org.data).toEqual({
      domain: expect.stringMatching(/^[0-9a-z]{8}\.gb\.bizdir\.test$/),
      public_domain: 'alpha-anchors-ltd.bizdir.test',
      version_number: 1,
    });
    expect(rest[1]!.data).toEqual({
      domain: expect.stringMatching(/^[0-9a-z]{8}\.a\.gb\.bizdir\.test$/),
      version_number: 1,
      org_domain: org.data.domain,
    });
    // The domain an event names is the record's own.
    expect(org.data.domain).toBe(await domainOf(A));
    orgDomains = new Map(
      rest
        .filter((e) => e.type === 'org.created')
        .map((e, i) => [base[i]!.CompanyNumber!, e.data.domain as string]),
    );
    await expectUnbrokenVersions(t.db);
  });

  it('the same file again: no record event, only the run’s brackets', async () => {
    const mark = await lastEventId(t.db);
    await importFeed(t.db, 'registrar', register(base));
    const events = await eventsAfter(mark);
    expect(byType(events)).toEqual(['import.started', 'import.completed']);
    expect(events[1]!.data).toMatchObject({ first_id: null, last_id: null, counts: { unchanged: 4 } });
  });

  it('a month later: a rename, a move, a status change and a new company, each its own events', async () => {
    const mark = await lastEventId(t.db);
    await importFeed(
      t.db,
      'registrar',
      register([
        company(A, 'ALPHA ANCHORS AND CHAINS LTD'),
        company(B, 'BRAVO BOATS LTD', { 'RegAddress.PostTown': 'HULL' }),
        company(C, 'CHARLIE CHARTS LTD', { CompanyStatus: 'Liquidation' }),
        company(D, 'DELTA DOCKS LTD'),
        company(E, 'ECHO ESTUARY LTD'),
      ]),
    );
    const events = await recordEvents(t.db, mark);
    const of = (number: string) => orgDomains.get(number);
    const about = (domain: string | undefined) =>
      events
        .filter((e) => e.data.domain === domain || e.data.org_domain === domain)
        .map((e) => [e.type, e.data]);
    expect(about(of(A))).toEqual([
      [
        'org.updated',
        {
          domain: of(A),
          public_domain: 'alpha-anchors-and-chains-ltd.bizdir.test',
          version_number: 2,
          changed: ['informal_name', 'name', 'public_domain'],
        },
      ],
    ]);
    // An Org whose registered address moved is bumped with it; what moved is the Address's own event.
    expect(about(of(B))).toEqual([
      ['org.updated', expect.objectContaining({ domain: of(B), version_number: 2, changed: [] })],
      [
        'address.updated',
        expect.objectContaining({ version_number: 2, changed: ['city'], org_domain: of(B) }),
      ],
    ]);
    // The register's status is not in the Org object, but it is a change: the version moves.
    expect(about(of(C))).toEqual([
      ['org.updated', expect.objectContaining({ version_number: 2, changed: [] })],
    ]);
    expect(about(of(D))).toEqual([]);
    const created = events.find((e) => e.type === 'org.created')!;
    expect(created.data).toMatchObject({ public_domain: 'echo-estuary-ltd.bizdir.test', version_number: 1 });
    expect(byType(events).sort()).toEqual(
      [
        'org.updated',
        'org.updated',
        'org.updated',
        'address.updated',
        'org.created',
        'address.created',
      ].sort(),
    );
    orgDomains.set(E, created.data.domain as string);
    await expectUnbrokenVersions(t.db);
  });

  it('--full: a company missing from the file has left the register: one org.left_register, at its new version', async () => {
    const mark = await lastEventId(t.db);
    const run = await importFeed(
      t.db,
      'registrar',
      register([
        company(A, 'ALPHA ANCHORS AND CHAINS LTD'),
        company(C, 'CHARLIE CHARTS LTD', { CompanyStatus: 'Liquidation' }),
        company(D, 'DELTA DOCKS LTD'),
        company(E, 'ECHO ESTUARY LTD'),
      ]),
      { full: true },
    );
    const events = await eventsAfter(mark);
    expect(byType(events)).toEqual(['import.started', 'org.left_register', 'import.completed']);
    const today = new Date().toISOString().slice(0, 10);
    expect(events[1]!.data).toEqual({
      domain: orgDomains.get(B),
      public_domain: 'bravo-boats-ltd.bizdir.test',
      version_number: 3,
      changed: ['left_register_on'],
      left_register_on: today,
    });
    expect(events[2]!.data).toMatchObject({
      run_id: run.id,
      full: true,
      first_id: events[1]!.id,
      last_id: events[1]!.id,
      counts: { closed: 1 },
    });
    await expectUnbrokenVersions(t.db);
  });

  it('a company back on the register: org.updated naming left_register_on', async () => {
    const mark = await lastEventId(t.db);
    await importFeed(
      t.db,
      'registrar',
      register([company(B, 'BRAVO BOATS LTD', { 'RegAddress.PostTown': 'HULL' })]),
    );
    const events = await recordEvents(t.db, mark);
    expect(events.map((e) => [e.type, e.data.domain, e.data.version_number, e.data.changed])).toEqual([
      ['org.updated', orgDomains.get(B), 4, ['left_register_on']],
    ]);
    await expectUnbrokenVersions(t.db);
  });
});

describe('events of the location feed', () => {
  const HEADER = 'Store code,Business name,Address line 1,Locality,Country / Region,Website,Company number';
  const row = (code: string, city: string, web = 'https://alpha.example') =>
    `${code},Alpha Anchors,1 Quay,${city},GB,${web},${A}`;
  const sheet = (...rows: string[]) => tempFile('sheet.csv', `${HEADER}\r\n${rows.join('\r\n')}\r\n`);
  let alpha: string;

  it('new Locations: location.created and address.created, naming their Org', async () => {
    alpha = await domainOf(A);
    const mark = await lastEventId(t.db);
    await importFeed(t.db, 'locations', sheet(row('AL-1', 'Whitby'), row('AL-2', 'Scarborough')));
    const events = await recordEvents(t.db, mark);
    expect(byType(events)).toEqual([
      'location.created',
      'address.created',
      'location.created',
      'address.created',
    ]);
    expect(events[0]!.data).toEqual({
      domain: expect.stringMatching(/^[0-9a-z]{8}\.loc\.gb\.bizdir\.test$/),
      public_domain: expect.stringMatching(/\.loc\.bizdir\.test$/),
      version_number: 1,
      org_domain: alpha,
    });
    expect(events[1]!.data).toEqual({
      domain: expect.stringMatching(/\.a\.gb\.bizdir\.test$/),
      version_number: 1,
      org_domain: alpha,
      location_domain: events[0]!.data.domain,
    });
    await expectUnbrokenVersions(t.db);
  });

  it('changed Locations: location.updated with what changed; a moved address is address.updated of that run', async () => {
    const mark = await lastEventId(t.db);
    const run = await importFeed(
      t.db,
      'locations',
      sheet(row('AL-1', 'Whitby', 'https://alpha.example/whitby'), row('AL-2', 'Filey')),
    );
    const events = await recordEvents(t.db, mark);
    // A batch writes its changed Addresses, then its changed Locations (locations.write.ts).
    expect(byType(events)).toEqual(['address.updated', 'location.updated', 'location.updated']);
    const [moved, linked, relabelled] = events;
    expect(moved!.data).toMatchObject({ version_number: 2, changed: ['city'], org_domain: alpha });
    expect(linked!.data).toMatchObject({ version_number: 2, changed: ['links'], org_domain: alpha });
    // Its address moved to Filey: same Location, a new public label (the city is part of it).
    expect(relabelled!.data).toMatchObject({
      version_number: 2,
      changed: ['public_domain'],
      org_domain: alpha,
    });
    expect(moved!.data.location_domain).toBe(relabelled!.data.domain);
    // The Address was written before its Location, yet its event names the run (so the range of
    // import.completed covers it).
    const { rows } = await sql<{ run_id: number }>`
      select run_id from events where type = 'address.updated' order by xid desc, seq desc limit 1`.execute(
      t.db,
    );
    expect(rows).toEqual([{ run_id: run.id }]);
    await expectUnbrokenVersions(t.db);
  });

  it('--full: the Location the sheet no longer names is closed: one location.closed', async () => {
    const mark = await lastEventId(t.db);
    await importFeed(t.db, 'locations', sheet(row('AL-1', 'Whitby', 'https://alpha.example/whitby')), {
      full: true,
    });
    const events = await recordEvents(t.db, mark);
    expect(byType(events)).toEqual(['location.closed']);
    expect(events[0]!.data).toMatchObject({ version_number: 3, changed: ['closed_date'], org_domain: alpha });
    // The same --full sheet again closes nothing more.
    const again = await lastEventId(t.db);
    await importFeed(t.db, 'locations', sheet(row('AL-1', 'Whitby', 'https://alpha.example/whitby')), {
      full: true,
    });
    expect(await recordEvents(t.db, again)).toEqual([]);
    await expectUnbrokenVersions(t.db);
  });

  it('a Location moved from a by-name Org to the registered one: one location.updated naming its new Org', async () => {
    const header = 'Store code,Business name,Address line 1,Locality,Country / Region';
    await importFeed(
      t.db,
      'locations',
      tempFile('byname.csv', `${header}\r\nMV-1,Alpha Kiosk,9 Pier,Hull,GB\r\n`),
    );
    const mark = await lastEventId(t.db);
    await importFeed(
      t.db,
      'locations',
      tempFile('named.csv', `${header},Company number\r\nMV-1,Alpha Kiosk,9 Pier,Hull,GB,${A}\r\n`),
    );
    const events = await recordEvents(t.db, mark);
    expect(events.map((e) => [e.type, e.data.version_number, e.data.org_domain])).toEqual([
      ['location.updated', 2, alpha],
    ]);
    expect(events[0]!.data.changed).toEqual(expect.arrayContaining(['org_domain']));
    await expectUnbrokenVersions(t.db);
  });

  it('every import run is bracketed, and each bracket pair names the run', async () => {
    const events = await feedEvents(t.db, { types: ['import.*'] });
    const { rows } = await sql<{ id: number }>`select id from import_runs order by id`.execute(t.db);
    expect(events.map((e) => [e.type, e.data.run_id])).toEqual(
      rows.flatMap((r) => [
        ['import.started', r.id],
        ['import.completed', r.id],
      ]),
    );
  });
});
