import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeSource } from '../jobs/schedules/source-fingerprint.js';
import { resolveSources, SourcesUnreachableError } from '../jobs/schedules/source-resolution.js';
import { dateIn, periodsBefore, SourceTemplates } from '../jobs/schedules/source-template.js';

/**
 * A schedule's sources as templates of the date (jobs/schedules/source-template.ts), and which
 * period a run reads (source-resolution.ts): against local files and a feed server on loopback.
 */
const REGISTER = 'BasicCompanyData-{yyyy}-{mm}-01-part{1..7}_7.zip';
const dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-templates-'));
/** The paths the server has, and what it answers for the others (404 unless set). */
const published = new Set<string>();
let otherStatus = 404;
let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (published.has(req.url ?? '')) res.writeHead(200, { etag: `"${req.url}"` }).end();
    else res.writeHead(otherStatus).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const publish = (yyyy: string, mm: string, parts: number[]) => {
  for (const n of parts) published.add(`/BasicCompanyData-${yyyy}-${mm}-01-part${n}_7.zip`);
};

describe('source templates', () => {
  it('expand the date and a range into one source each', () => {
    const t = new SourceTemplates([`https://example.test/${REGISTER}`, 'https://example.test/extra.csv']);
    expect(t.period).toBe('month');
    const [register, extra] = t.expand({ year: 2026, month: 3, day: 9 });
    expect(register!.sources).toEqual(
      [1, 2, 3, 4, 5, 6, 7].map((n) => `https://example.test/BasicCompanyData-2026-03-01-part${n}_7.zip`),
    );
    expect(extra).toEqual({
      template: 'https://example.test/extra.csv',
      dated: false,
      sources: ['https://example.test/extra.csv'],
    });
    expect(
      new SourceTemplates(['/f/{yyyy}{mm}{dd}-{01..03}.csv']).expand({ year: 2026, month: 12, day: 5 })[0]!
        .sources,
    ).toEqual(['/f/20261205-01.csv', '/f/20261205-02.csv', '/f/20261205-03.csv']);
    expect(new SourceTemplates(['/f/{dd}.csv']).period).toBe('day');
    expect(new SourceTemplates(['/f/{yyyy}.csv']).period).toBe('year');
    expect(new SourceTemplates(['/f/plain.csv']).period).toBeNull();
  });

  it.each([
    ['/f/{yyyy}-{month}.csv', /unknown placeholder \{month\} \(known: \{yyyy\} \{mm\} \{dd\}/],
    ['/f/part{3..1}.csv', /the range \{3\.\.1\} runs backwards/],
    ['/f/part{1..101}.csv', /the range \{1\.\.101\} makes 101 sources; at most 100/],
    ['/f/part{1..7.csv', /a "\{" without its "\}"/],
    ['/f/part1..7}.csv', /a "\}" without its "\{"/],
    ['/f/{}.csv', /unknown placeholder \{\}/],
  ])('refuse %s', (template, message) => {
    expect(() => new SourceTemplates([template])).toThrow(message);
  });

  it('refuse more than 100 sources in all, and a source given twice', () => {
    expect(() => new SourceTemplates(['/a/{1..60}.csv', '/b/{1..41}.csv'])).toThrow(/101 sources in all/);
    expect(() => new SourceTemplates(['/a/{1..2}.csv', '/a/2.csv'])).toThrow(/"\/a\/2.csv" is given twice/);
  });

  it('read the date in the time zone, and count periods back across a year', () => {
    // 23:30 UTC on 31 December is already 1 January in Tokyo.
    const at = new Date('2026-12-31T23:30:00Z');
    expect(dateIn(at, 'UTC')).toEqual({ year: 2026, month: 12, day: 31 });
    expect(dateIn(at, 'Asia/Tokyo')).toEqual({ year: 2027, month: 1, day: 1 });
    expect(periodsBefore({ year: 2027, month: 1, day: 31 }, 'month', 2)).toEqual({
      year: 2026,
      month: 11,
      day: 30,
    });
    expect(periodsBefore({ year: 2026, month: 3, day: 1 }, 'day', 1)).toEqual({
      year: 2026,
      month: 2,
      day: 28,
    });
  });
});

describe('which period a run reads', () => {
  const templates = () => new SourceTemplates([`${base}/${REGISTER}`]);
  const at = new Date('2026-12-02T06:00:00Z');

  it('the newest month whose parts are all there; months not published yet are passed over', async () => {
    published.clear();
    publish('2026', '10', [1, 2, 3, 4, 5, 6, 7]);
    publish('2026', '11', [1, 2, 3, 4, 5, 6, 7]);
    const r = await resolveSources(templates(), at, 'Europe/London', probeSource);
    expect(r.kind).toBe('found');
    if (r.kind !== 'found') throw new Error('unreachable');
    expect(r.period).toBe('2026-11');
    expect(r.notPublished).toEqual(['2026-12']);
    expect(r.sources.map((s) => s.location)).toEqual(
      [1, 2, 3, 4, 5, 6, 7].map((n) => `${base}/BasicCompanyData-2026-11-01-part${n}_7.zip`),
    );
    expect(await r.fingerprints()).toEqual(
      [1, 2, 3, 4, 5, 6, 7].map((n) => `etag="/BasicCompanyData-2026-11-01-part${n}_7.zip"`),
    );
  });

  it('a month with a part missing fails and names the part, without falling back to an older month', async () => {
    published.clear();
    publish('2026', '11', [1, 2, 3, 4, 5, 6, 7]);
    publish('2026', '12', [1, 2, 4, 5, 6, 7]);
    const r = await resolveSources(templates(), at, 'UTC', probeSource);
    expect(r.kind).toBe('incomplete');
    if (r.kind !== 'incomplete') throw new Error('unreachable');
    expect(r.period).toBe('2026-12');
    expect(r.message).toBe(
      `2026-12: missing: source 3 of 7, ${base}/BasicCompanyData-2026-12-01-part3_7.zip (HTTP 404 Not Found); nothing was imported`,
    );
  });

  it('fails when no month of the four looked at is published', async () => {
    published.clear();
    publish('2026', '08', [1, 2, 3, 4, 5, 6, 7]);
    const r = await resolveSources(templates(), at, 'UTC', probeSource);
    expect(r).toMatchObject({ kind: 'none', tried: ['2026-12', '2026-11', '2026-10', '2026-09'] });
    expect((r as { message: string }).message).toMatch(
      /^no sources published for 2026-12, 2026-11, 2026-10, 2026-09 \(.*part1_7\.zip: HTTP 404/,
    );
  });

  it('a server error is not a missing part: the firing is tried again', async () => {
    published.clear();
    otherStatus = 503;
    try {
      await expect(resolveSources(templates(), at, 'UTC', probeSource)).rejects.toThrow(
        SourcesUnreachableError,
      );
    } finally {
      otherStatus = 404;
    }
  });

  it('local files: found with stat, and a missing one is named', async () => {
    for (const m of ['10', '11'])
      for (const n of [1, 2]) writeFileSync(path.join(dir, `reg-2026-${m}-${n}.csv`), `month ${m}\n`);
    const local = new SourceTemplates([path.join(dir, 'reg-{yyyy}-{mm}-{1..2}.csv')]);
    const found = await resolveSources(local, at, 'UTC', probeSource);
    expect(found).toMatchObject({ kind: 'found', period: '2026-11', notPublished: ['2026-12'] });
    writeFileSync(path.join(dir, 'reg-2026-12-2.csv'), 'month 12\n');
    const partial = await resolveSources(local, at, 'UTC', probeSource);
    expect(partial).toMatchObject({ kind: 'incomplete', period: '2026-12' });
    expect((partial as { message: string }).message).toContain(
      `source 1 of 2, ${path.join(dir, 'reg-2026-12-1.csv')} (file not found)`,
    );
  });
});
