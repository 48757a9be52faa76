import { describe, expect, it } from 'vitest';
import {
  parseApi,
  parseImport,
  parseLocations,
  parseLocationsCpu,
  parseRegister,
  renderTable,
} from '../bench/bench-table.js';

// Output in the exact shapes the benchmark scripts print (bench/*.bench.ts).
const IMPORT_OUT = `generated 200000 rows (61 MB) twice in 9.1 s
(a) baseline papaparse -> COPY: 2.50 s, 80000 rows/s
(a2) psql \\copy: 1.00 s, 200000 rows/s = 2.50 x (a)
worker peak RSS at start: 120 MB
(b) first import: 8.00 s, 25000 rows/s = 0.31 x (a), 0.125 x (a2) | 200000 inserted, 0 updated, 0 unchanged, 0 rejected | worker peak RSS so far 300 MB
(c) same file again: 2.40 s, 83333 rows/s = 1.04 x (a), 0.417 x (a2) | 0 inserted, 0 updated, 200000 unchanged, 0 rejected | worker peak RSS so far 310 MB
(d) 10% of rows changed: 6.00 s, 33333 rows/s = 0.42 x (a), 0.167 x (a2) | 0 inserted, 20000 updated, 180000 unchanged, 0 rejected | worker peak RSS so far 320 MB
(e) 7 parts, 1 worker: 10.00 s, 20000 rows/s = 0.25 x (a), 0.100 x (a2) | 200000 inserted | worker peak RSS 300 MB
(f) 7 parts, 2 workers: 7.00 s, 28571 rows/s = 0.36 x (a), 0.143 x (a2), 1.43 x (e) | 200000 inserted | worker peak RSS 280, 290 MB
worker peak RSS: 320 MB (N = 200000)
`;

const API_OUT = `  round 1 bare org                      9999 req/s   p50   1.0 ms   p99   9.0 ms   server CPU  100 us/req   non-2xx/3xx 0   errors 0
mean of 3 rounds
bare org                      8000 req/s   p50   3.1 ms   p99  12.0 ms   server CPU  101 us/req   non-2xx/3xx 0   errors 0
GET /v1/org/{domain}          4400 req/s   p50   6.2 ms   p99  20.5 ms   server CPU  175 us/req   non-2xx/3xx 0   errors 0
bare location                 9000 req/s   p50   3.0 ms   p99  11.0 ms   server CPU  131 us/req   non-2xx/3xx 0   errors 0
GET /v1/location/{domain}     4000 req/s   p50   7.0 ms   p99  30.0 ms   server CPU  158 us/req   non-2xx/3xx 0   errors 0
304 (If-None-Match)           7000 req/s   p50   4.0 ms   p99  15.0 ms   server CPU   99 us/req   non-2xx/3xx 0   errors 0
`;

const LOCATIONS_OUT = `sheet: 100000 rows, 5000 Orgs, 40.1 MiB (/tmp/x/locations.csv)
first import         4.26 s  23,474 rows/s  peak RSS 210 MiB  node CPU 3.1 s  (inserted 100000, updated 0, unchanged 0, rejected 0)
unchanged re-import  2.10 s  47,619 rows/s  peak RSS 215 MiB  node CPU 1.9 s  (inserted 0, updated 0, unchanged 100000, rejected 0)
`;

describe('bench table', () => {
  it('reads the import benchmark: rates, ratios to (a), peak RSS against the targets', () => {
    const rows = parseImport(IMPORT_OUT);
    expect(rows.map((r) => [r.figure, r.value, r.ratio, r.met])).toEqual([
      ['(a) papaparse -> COPY', 80000, undefined, undefined],
      ['(a2) psql \\copy', 200000, undefined, undefined],
      ['(b) first import', 25000, 0.31, false],
      ['(c) same file again', 83333, 1.04, true],
      ['(d) 10% of rows changed', 33333, 0.42, false],
      ['(e) 7 parts, 1 worker', 20000, undefined, undefined],
      ['(f) 7 parts, 2 workers', 28571, 1.43, true],
      ['worker peak RSS', 320, undefined, true],
    ]);
  });

  it('reads the API benchmark: both reads against their bare lookups (means, not round 1), and the 304 path', () => {
    const rows = parseApi(API_OUT);
    expect(rows.map((r) => [r.figure, r.value, r.met])).toEqual([
      ['bare org (primary-key lookup)', 8000, undefined],
      ['GET /v1/org/{domain}', 4400, true],
      ['GET /v1/org/{domain} p99', 20.5, true],
      ['bare location (primary-key lookup)', 9000, undefined],
      ['GET /v1/location/{domain}', 4000, false],
      ['GET /v1/location/{domain} p99', 30, false],
      ['304 path', 7000, undefined],
    ]);
    expect(rows[1]?.ratio).toBe(0.55);
  });

  it('reads the locations benchmark', () => {
    expect(parseLocations(LOCATIONS_OUT).map((r) => [r.figure, r.value, r.met])).toEqual([
      ['first import', 23474, true],
      ['unchanged re-import', 47619, true],
    ]);
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
    expect(parseRegister('no figures at all')).toEqual([]);
  });

  it('leaves out what a benchmark did not print and renders one table', () => {
    expect(parseImport('nothing useful')).toEqual([]);
    const table = renderTable(parseLocations(LOCATIONS_OUT), [
      { bench: 'api', reason: 'exited with code 1' },
    ]);
    const lines = table.split('\n');
    expect(lines[0]).toMatch(/^benchmark\s+figure\s+measured\s+baseline\s+ratio\s+target\s+met$/);
    expect(lines[1]).toMatch(/^locations\s+first import\s+23,474 rows\/s\s+-\s+-\s+>= 20,000 rows\/s\s+yes$/);
    expect(lines[3]).toMatch(/^api\s+\(no figures: exited with code 1\)$/);
  });
  it('reads the per-row CPU cost of the location import stages', () => {
    const out = [
      'sheet: 20000 rows, 5000 Orgs, 9.1 MiB; best of 3',
      'read         7.58 µs CPU/row (stage +7.58)  wall 5.27 µs/row = 189,767 rows/s  GC 41% of wall',
      'normalize   16.17 µs CPU/row (stage +8.60)  wall 12.43 µs/row = 80,429 rows/s  GC 21% of wall',
      'encode      19.33 µs CPU/row (stage +3.16)  wall 16.29 µs/row = 61,406 rows/s  GC 17% of wall',
    ].join('\n');
    expect(parseLocationsCpu(out).map((r) => [r.figure, r.value, r.met])).toEqual([
      ['read (CSV)', 7.58, undefined],
      ['read + normalize', 16.17, undefined],
      ['read + normalize + merge/hash', 19.33, undefined],
    ]);
    expect(parseLocationsCpu('nothing here')).toEqual([]);
  });
});
