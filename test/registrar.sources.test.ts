import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openSource } from '../ingest/source.js';
import { createTestDb, type TestDb } from './support/db.js';
import { importFeed } from './support/import.js';
import { makeZip } from './support/zip.js';

const CSV = readFileSync('test/fixtures/registrar-small.csv');
const dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-sources-'));
const file = (name: string, content: Buffer) => {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
};

let t: TestDb;
let server: http.Server;
let base: string;

beforeAll(async () => {
  t = await createTestDb();
  const files: Record<string, { body: Buffer; type: string }> = {
    '/feed.csv': { body: CSV, type: 'text/csv' },
    '/feed.csv.gz': { body: gzipSync(CSV), type: 'application/gzip' },
    '/feed.zip': {
      body: makeZip([{ name: 'BasicCompanyData-part1.csv', data: CSV }]),
      type: 'application/zip',
    },
  };
  server = http.createServer((req, res) => {
    const f = files[req.url ?? ''];
    if (!f) {
      res.writeHead(404).end('not here');
      return;
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

  it('reports a missing local file', async () => {
    await expect(openSource(path.join(dir, 'nope.csv'))).rejects.toThrow(/file not found/);
    expect(existsSync(path.join(dir, 'nope.csv'))).toBe(false);
  });
});
