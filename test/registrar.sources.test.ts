import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createImportRun, createScheduledRun } from '../ingest/import-runs/import-runs.state.js';
import { runImport } from '../ingest/run/run-import.js';
import { csvEntriesOf, openSource } from '../ingest/source.js';
import { createTestDb, type TestDb } from './support/db.js';
import { FEED_CONFIG, importFeed } from './support/import.js';
import { makeZip } from './support/zip.js';

const CSV = readFileSync('test/fixtures/registrar-small.csv');
const dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-sources-'));
const file = (name: string, content: Buffer) => {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
};

// The register in parts: two CSVs in one zip, each with the header and half the rows.
const [HEADER, ...ROWS] = CSV.toString('utf8').trimEnd().split('\n');
const half = Math.ceil(ROWS.length / 2);
const PART1 = `${HEADER}\n${ROWS.slice(0, half).join('\n')}\n`;
const PART2 = `${HEADER}\n${ROWS.slice(half).join('\n')}\n`;
const TWO_PARTS = makeZip([
  { name: 'BasicCompanyData-part1_2.csv', data: PART1 },
  { name: 'BasicCompanyData-part2_2.csv', data: PART2 },
]);

let t: TestDb;
let server: http.Server;
let base: string;
/** What the server answered, for the paths under /ranged/: status and the Range asked for. */
const served: { status: number; range: string | undefined }[] = [];

beforeAll(async () => {
  t = await createTestDb();
  const files: Record<string, { body: Buffer; type: string }> = {
    '/feed.csv': { body: CSV, type: 'text/csv' },
    '/feed.csv.gz': { body: gzipSync(CSV), type: 'application/gzip' },
    '/feed.zip': {
      body: makeZip([{ name: 'BasicCompanyData-part1.csv', data: CSV }]),
      type: 'application/zip',
    },
    '/parts.zip': { body: TWO_PARTS, type: 'application/zip' },
    '/ranged/parts.zip': { body: TWO_PARTS, type: 'application/zip' },
  };
  // Paths under /ranged/ serve byte ranges as a static file server does; the others ignore Range.
  server = http.createServer((req, res) => {
    const f = files[req.url ?? ''];
    if (!f) {
      res.writeHead(404).end('not here');
      return;
    }
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (req.url?.startsWith('/ranged/')) {
      served.push({ status: range ? 206 : 200, range: req.headers.range });
      if (range) {
        const start = Number(range[1]);
        const end = Math.min(Number(range[2]), f.body.length - 1);
        res
          .writeHead(206, {
            'content-type': f.type,
            'content-length': end - start + 1,
            'content-range': `bytes ${start}-${end}/${f.body.length}`,
            etag: '"v1"',
          })
          .end(f.body.subarray(start, end + 1));
        return;
      }
    }
    res.writeHead(200, { 'content-type': f.type, 'content-length': f.body.length }).end(f.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await t?.drop();
});

beforeEach(async () => {
  await sql`truncate orgs, addresses, org_public_domains, public_slug_counters, import_run_keys, import_rejects, import_runs restart identity cascade`.execute(
    t.db,
  );
});

const loaded = async () => (await t.db.selectFrom('orgs').select('registration_number').execute()).length;

describe('feed sources', () => {
  it.each([
    ['a local .gz file', () => file('feed.csv.gz', gzipSync(CSV))],
    ['a local .zip holding one CSV', () => file('feed.zip', makeZip([{ name: 'data/feed.csv', data: CSV }]))],
    ['a gzip file named .csv (sniffed)', () => file('really-gzip.csv', gzipSync(CSV))],
    ['a CSV over http', () => `${base}/feed.csv`],
    ['a .gz over http', () => `${base}/feed.csv.gz`],
    ['a .zip over http', () => `${base}/feed.zip`],
  ])('imports %s', async (_what, where) => {
    const run = await importFeed(t.db, 'registrar', where());
    expect(run).toMatchObject({ status: 'succeeded', inserted: 8, rejected: 2, bytes_read: run.bytes_total });
    expect(await loaded()).toBe(8);
  });

  it('removes the temporary download of a zip URL', async () => {
    const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-dl-'));
    const source = await openSource(`${base}/feed.zip`, { tmpDir });
    expect(readdirSync(tmpDir)).toHaveLength(1);
    for await (const _ of source.stream) {
      // drain
    }
    await source.close();
    expect(readdirSync(tmpDir)).toHaveLength(0);
  });

  it.each([
    [
      'a zip without a CSV',
      () => file('none.zip', makeZip([{ name: 'readme.txt', data: 'hi' }])),
      /holds no CSV/,
    ],
    [
      'a zip with two CSVs',
      () =>
        file(
          'two.zip',
          makeZip([
            { name: 'part1.csv', data: CSV },
            { name: 'part2.csv', data: CSV },
          ]),
        ),
      /holds 2 CSV files \(part1.csv, part2.csv\); expected exactly one/,
    ],
    [
      'a corrupt .gz',
      () => file('bad.csv.gz', gzipSync(CSV).subarray(0, 200)),
      /corrupt gzip|unexpected end/i,
    ],
    ['a URL answering 404', () => `${base}/missing.csv`, /HTTP 404/],
  ])('fails clearly on %s', async (_what, where, reason) => {
    await expect(importFeed(t.db, 'registrar', where())).rejects.toThrow(reason);
    const run = await t.db.selectFrom('import_runs').select(['status', 'error']).executeTakeFirstOrThrow();
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(reason);
    expect(await loaded()).toBe(0);
  });

  it('lists and reads the CSVs of a zip URL in place, with range requests (no download)', async () => {
    served.length = 0;
    const url = `${base}/ranged/parts.zip`;
    expect(await csvEntriesOf(url)).toEqual(['BasicCompanyData-part1_2.csv', 'BasicCompanyData-part2_2.csv']);
    const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-dl-'));
    const source = await openSource(url, { tmpDir, entry: 'BasicCompanyData-part2_2.csv' });
    let text = '';
    for await (const chunk of source.stream) text += chunk.toString('utf8');
    await source.close();
    expect(text).toBe(PART2);
    expect(readdirSync(tmpDir)).toHaveLength(0);
    // Every answer was a part of the file: the zip was never sent whole.
    expect(served.length).toBeGreaterThan(0);
    expect(served.every((s) => s.status === 206 && s.range !== undefined)).toBe(true);
  });

  it('lists the CSVs of a zip URL from a server without range requests (downloaded, then removed)', async () => {
    const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-dl-'));
    expect(await csvEntriesOf(`${base}/parts.zip`, tmpDir)).toEqual([
      'BasicCompanyData-part1_2.csv',
      'BasicCompanyData-part2_2.csv',
    ]);
    expect(readdirSync(tmpDir)).toHaveLength(0);
    expect(await csvEntriesOf(`${base}/feed.csv`)).toEqual([]);
  });

  it.each([
    ['with range requests', '/ranged/parts.zip'],
    ['without', '/parts.zip'],
  ])('imports a zip URL holding several CSVs as one run of one part each (%s)', async (_what, where) => {
    const url = `${base}${where}`;
    const entries = await csvEntriesOf(url);
    const created = await createImportRun(t.db, {
      feed: 'registrar',
      parts: entries.map((entry) => ({ source: url, entry })),
      options: { country: 'GB', full: false },
    });
    const run = await runImport({ db: t.db, config: FEED_CONFIG, batchSize: 3 }, created.id);
    expect(run).toMatchObject({ status: 'succeeded', inserted: 8, rejected: 2 });
    expect(await loaded()).toBe(8);
    const parts = await t.db
      .selectFrom('import_run_parts')
      .select(['entry', 'status'])
      .orderBy('part_no')
      .execute();
    expect(parts).toEqual(entries.map((entry) => ({ entry, status: 'succeeded' })));
  });

  it('a scheduled run of a zip URL holding several CSVs reads one part per CSV', async () => {
    const url = `${base}/ranged/parts.zip`;
    const scheduled = await createScheduledRun(t.db, {
      feed: 'registrar',
      source: url,
      options: { country: 'GB', full: false },
      scheduleName: 'register',
      slot: new Date('2026-11-01T06:00:00Z'),
      fingerprint: null,
      status: 'queued',
    });
    const run = await runImport({ db: t.db, batchSize: 3, config: FEED_CONFIG }, scheduled.id);
    expect(run).toMatchObject({ status: 'succeeded', inserted: 8, rejected: 2 });
    const parts = await t.db
      .selectFrom('import_run_parts')
      .select(['entry', 'status'])
      .orderBy('part_no')
      .execute();
    expect(parts).toEqual([
      { entry: 'BasicCompanyData-part1_2.csv', status: 'succeeded' },
      { entry: 'BasicCompanyData-part2_2.csv', status: 'succeeded' },
    ]);
  });

  it('reports a missing local file', async () => {
    await expect(openSource(path.join(dir, 'nope.csv'))).rejects.toThrow(/file not found/);
    expect(existsSync(path.join(dir, 'nope.csv'))).toBe(false);
  });
});
