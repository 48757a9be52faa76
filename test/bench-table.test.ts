import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  type BenchRow,
  parseApi,
  parseEvents,
  parseImport,
  parseLocations,
  parseLocationsCpu,
  parseRegister,
  parseWebhooks,
  renderTable,
} from '../bench/bench-table.js';

// The readers are checked against what the benchmark scripts really printed, recorded at tiny sizes
// in test/fixtures/bench/ (its README gives each command): their figures mean nothing, only their
// shape is checked. A change to a script's output is recorded there again, and this test then says
// whether its reader still understands it; no benchmark runs here.
const recorded = (name: string) =>
  readFileSync(new URL(`./fixtures/bench/${name}.txt`, import.meta.url), 'utf8');

const out: Record<string, string> = {
  import: recorded('import'),
  api: recorded('api'),
  locations: recorded('locations'),
  locationsCpu: recorded('locations-cpu'),
  events: recorded('events'),
  webhooks: recorded('webhooks'),
};

const shape = (rows: BenchRow[]) => rows.map((r) => r.figure);
function expectMeasured(rows: BenchRow[]) {
  for (const r of rows) {
    expect(Number.isFinite(r.value), r.figure).toBe(true);
    expect(r.value, r.figure).toBeGreaterThan(0);
  }
}

describe('bench table', () => {
  it('reads the import benchmark: rates, ratios to (a), peak RSS against the targets', () => {
    const rows = parseImport(out.import ?? '');
    expect(shape(rows)).toEqual([
      '(a) papaparse -> COPY',
      '(a2) psql \\copy',
      '(b) first import',
      '(c) same file again',
      '(d) 10% of rows changed',
      '(e) 7 parts, 1 worker',
      '(f) 7 parts, 2 workers',
      'worker peak RSS',
    ]);
    expectMeasured(rows);
    const base = rows[0]?.value ?? Number.NaN;
    for (const r of rows.slice(2, 5)) {
      expect(r.baseline).toBe(base);
      // The ratio the script prints (two decimals) is the rate over the baseline's.
      expect(Math.abs((r.ratio ?? Number.NaN) - r.value / base), r.figure).toBeLessThan(0.01);
    }
    // Two workers on the parts against one.
    const [e, f] = [rows[5], rows[6]];
    expect(f?.baseline).toBe(e?.value);
    expect(Math.abs((f?.ratio ?? Number.NaN) - (f?.value ?? 0) / (e?.value ?? 1))).toBeLessThan(0.01);
    expect(rows[7]?.met).toBe((rows[7]?.value ?? 0) < 512);
  });

  it('reads the API benchmark: each read against its bare route, and the 304 path', () => {
    const rows = parseApi(out.api ?? '');
    expect(shape(rows)).toEqual([
      'bare org (primary-key lookup)',
      'GET /v1/org/{domain}',
      'GET /v1/org/{domain} p99',
      'bare location (primary-key lookup)',
      'GET /v1/location/{domain}',
      'GET /v1/location/{domain} p99',
      '304 path',
    ]);
    expectMeasured(rows);
    for (const [bare, app] of [
      [rows[0], rows[1]],
      [rows[3], rows[4]],
    ]) {
      expect(app?.baseline).toBe(bare?.value);
      expect(app?.ratio).toBeCloseTo((app?.value ?? 0) / (bare?.value ?? 1), 9);
    }
  });

  it('reads the locations benchmark', () => {
    const rows = parseLocations(out.locations ?? '');
    expect(shape(rows)).toEqual(['first import', 'unchanged re-import']);
    expectMeasured(rows);
  });

  it("reads the register benchmark's final JSON object, whatever came before it", () => {
    const figures = {
      bytesPerOrg: 650,
      rebuildS: 300,
      plainS: 100,
      meiliPeakRssMiB: 4000,
      p99Ms: 40,
      pgP99Ms: 800,
      maxMs: 250,
      totalsWrong: 0,
      renameP50Ms: 900,
    };
    const out = `register: 1000 Orgs\n{ not json\n${JSON.stringify({ registerBench: figures }, null, 2)}\n`;
    const rows = parseRegister(out);
    expect(rows.map((r) => [r.figure, r.value, r.met])).toEqual([
      ['index bytes per Org', 650, true],
      ['rebuild vs plain word index', 300, false],
      ['Meilisearch peak RSS', 4000, true],
      ['API search p99 (hard mix)', 40, true],
      ['API search slowest', 250, false],
      ['totals differing from brute force', 0, true],
      ['rename searchable p50', 900, true],
    ]);
    expect(rows[1]?.ratio).toBe(3);
    expect(rows[3]?.ratio).toBe(0.05);
    // pg_trgm on the mix's first queries only: compared with the API on those same queries.
    // (300 ms is 12 x the API's 25 ms on them, though not 10 x its 40 ms over the whole mix.)
    const sampled = { ...figures, pgQueries: 50, pgP99Ms: 300, apiP99OnPgQueriesMs: 25 };
    const row = parseRegister(`${JSON.stringify({ registerBench: sampled }, null, 2)}\n`)[3];
    expect(row?.met).toBe(true);
    expect(row?.ratio).toBeCloseTo(25 / 300, 9);
    expect(parseRegister('no figures at all')).toEqual([]);
  });

  it("reads the events benchmark's final JSON object", () => {
    const figures = {
      readP99Ms: 12,
      readTypeP99Ms: 30,
      readRareP99Ms: 40,
      apiP99Ms: 20,
      apiTypeP99Ms: 24,
      monthOffS: 100,
      monthOnS: 108,
      unchangedOffS: 20,
      unchangedOnS: 22,
    };
    const rows = parseEvents(`(a) ...\n${JSON.stringify({ eventsBench: figures }, null, 2)}\n`);
    expect(rows.map((r) => [r.figure, r.value, r.met])).toEqual([
      ['page of 1,000 p99, read model', 12, true],
      ['page of 1,000 p99, read model, types=org.*', 30, false],
      ['page p99, read model, types=location.closed', 40, undefined],
      ['GET /v1/events p99 (1,000)', 20, true],
      ['GET /v1/events?types=org.* p99 (1,000)', 24, true],
      ['month-later --full import, events on', 108, true],
      ['unchanged re-import, events on', 22, false],
    ]);
    expect(rows[5]?.ratio).toBeCloseTo(1.08, 9);
    // What the script prints with --skip-imports: the read rows, the import rows left out.
    const reads = parseEvents(out.events ?? '');
    expect(shape(reads)).toEqual([
      'page of 1,000 p99, read model',
      'page of 1,000 p99, read model, types=org.*',
      'page p99, read model, types=location.closed',
      'GET /v1/events p99 (1,000)',
      'GET /v1/events?types=org.* p99 (1,000)',
    ]);
    expectMeasured(reads);
  });

  it("reads the webhooks benchmark's final JSON object", () => {
    const figures = {
      batchedSeconds: 12,
      batchedInOrder: true,
      unbatchedPerSecond: 900,
      unbatchedInOrder: true,
      downInOrder: false,
      downCatchUpSeconds: 20,
      workerPeakMiB: 160,
    };
    const rows = parseWebhooks(`(a) ...\n${JSON.stringify({ webhooksBench: figures }, null, 2)}\n`);
    expect(rows.map((r) => [r.figure, r.value, r.met])).toEqual([
      ['burst to one batched receiver', 12, true],
      ['unbatched receivers together', 900, false],
      ['receiver down for the burst, caught up after', 20, false],
      ['worker peak RSS', 160, true],
    ]);
    // What the script prints with --skip-down: the other rows, measured.
    const printed = parseWebhooks(out.webhooks ?? '');
    expect(shape(printed)).toEqual([
      'burst to one batched receiver',
      'unbatched receivers together',
      'worker peak RSS',
    ]);
    expectMeasured(printed);
    expect(printed.slice(0, 2).map((r) => r.target)).toEqual([
      '<= 30 s, every event in order',
      '>= 1,000/s, each in order',
    ]);
  });

  it('leaves out what a benchmark did not print and renders one table', () => {
    expect(parseImport('nothing useful')).toEqual([]);
    const table = renderTable(parseLocations(out.locations ?? ''), [
      { bench: 'api', reason: 'exited with code 1' },
    ]);
    const lines = table.split('\n');
    expect(lines[0]).toMatch(/^benchmark\s+figure\s+measured\s+baseline\s+ratio\s+target\s+met$/);
    expect(lines[1]).toMatch(
      /^locations\s+first import\s+[\d,]+ rows\/s\s+-\s+-\s+>= 20,000 rows\/s\s+(yes|NO)$/,
    );
    expect(lines[3]).toMatch(/^api\s+\(no figures: exited with code 1\)$/);
  });

  it('reads the per-row CPU cost of the location import stages', () => {
    const rows = parseLocationsCpu(out.locationsCpu ?? '');
    expect(shape(rows)).toEqual(['read (CSV)', 'read + normalize', 'read + normalize + merge/hash']);
    expectMeasured(rows);
    expect(parseLocationsCpu('nothing here')).toEqual([]);
  });
});
