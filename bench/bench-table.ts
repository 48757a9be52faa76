/**
 * Reads what each benchmark prints (its own human-readable lines, or the search benchmark's final
 * JSON object) into rows of one table: figure, measured value, baseline, ratio and the project's
 * target for it (written next to each reader below). A figure a benchmark did not print is left out,
 * never invented.
 */
export interface BenchRow {
  bench: string;
  figure: string;
  value: number;
  unit: string;
  baseline?: number;
  ratio?: number;
  target: string;
  /** undefined: the figure has no target. */
  met?: boolean;
}

const num = (s: string | undefined) => (s === undefined ? Number.NaN : Number(s.replaceAll(',', '')));
const ok = (rows: BenchRow[]) => rows.filter((r) => Number.isFinite(r.value));

/** `npm run bench:import`: targets as ratios to its own papaparse -> COPY baseline; the parts runs against one worker. */
export function parseImport(out: string): BenchRow[] {
  const base = num(/\(a\) baseline[^:]*: [\d.]+ s, ([\d.,]+) rows\/s/.exec(out)?.[1]);
  const psql = num(/\(a2\) psql[^:]*: [\d.]+ s, ([\d.,]+) rows\/s/.exec(out)?.[1]);
  const phase = (label: string) =>
    /: [\d.]+ s(?: \([^)]*\))?, ([\d.,]+) rows\/s = ([\d.]+) x \(a\)(?:, ([\d.]+) x \(a2\))?(?:, ([\d.]+) x \(e\))?/.exec(
      out.split(label)[1] ?? '',
    );
  const rows: BenchRow[] = [
    { bench: 'import', figure: '(a) papaparse -> COPY', value: base, unit: 'rows/s', target: 'baseline' },
    { bench: 'import', figure: '(a2) psql \\copy', value: psql, unit: 'rows/s', target: '-' },
  ];
  const targets: Array<[string, string, number | undefined]> = [
    ['(b) first import', '>= 0.5 x (a)', 0.5],
    ['(c) same file again', '>= 1.0 x (a)', 1.0],
    ['(d) 10% of rows changed', '>= 0.8 x (a)', 0.8],
  ];
  for (const [label, target, min] of targets) {
    const m = phase(label);
    const ratio = num(m?.[2]);
    rows.push({
      bench: 'import',
      figure: label,
      value: num(m?.[1]),
      unit: 'rows/s',
      baseline: base,
      ratio,
      target,
      ...(min !== undefined ? { met: ratio >= min } : {}),
    });
  }
  const e = phase('(e) 7 parts, 1 worker');
  const f = phase('(f) 7 parts, 2 workers');
  rows.push({
    bench: 'import',
    figure: '(e) 7 parts, 1 worker',
    value: num(e?.[1]),
    unit: 'rows/s',
    target: '-',
  });
  const parallel = num(f?.[4]);
  rows.push({
    bench: 'import',
    figure: '(f) 7 parts, 2 workers',
    value: num(f?.[1]),
    unit: 'rows/s',
    baseline: num(e?.[1]),
    ratio: parallel,
    target: '>= 1.3 x (e)',
    met: parallel >= 1.3,
  });
  const rss = num(/worker peak RSS: (\d+) MB/.exec(out)?.[1]);
  rows.push({
    bench: 'import',
    figure: 'worker peak RSS',
    value: rss,
    unit: 'MB',
    target: '< 512 MB',
    met: rss < 512,
  });
  return ok(rows);
}

/**
 * `npm run bench:api`: the means printed after `mean of N rounds`, each read through the real app
 * against a bare primary-key lookup of the same domains, and the 304 path.
 */
export function parseApi(out: string): BenchRow[] {
  const means = out.slice(Math.max(0, out.indexOf('mean of')));
  const line = (label: string) => {
    const m = new RegExp(
      `^${label.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\s+(\\d+) req/s\\s+p50\\s+([\\d.]+) ms\\s+p99\\s+([\\d.]+) ms`,
      'm',
    ).exec(means);
    return { rps: num(m?.[1]), p50: num(m?.[2]), p99: num(m?.[3]) };
  };
  const rows: BenchRow[] = [];
  for (const [bare, real] of [
    ['bare org', 'GET /v1/org/{domain}'],
    ['bare location', 'GET /v1/location/{domain}'],
  ] as const) {
    const a = line(bare);
    const b = line(real);
    const ratio = b.rps / a.rps;
    rows.push(
      {
        bench: 'api',
        figure: `${bare} (primary-key lookup)`,
        value: a.rps,
        unit: 'req/s',
        target: 'baseline',
      },
      {
        bench: 'api',
        figure: real,
        value: b.rps,
        unit: 'req/s',
        baseline: a.rps,
        ratio,
        target: '>= 0.5 x bare',
        met: ratio >= 0.5,
      },
      { bench: 'api', figure: `${real} p99`, value: b.p99, unit: 'ms', target: '<= 25 ms', met: b.p99 <= 25 },
    );
  }
  const notModified = line('304 (If-None-Match)');
  rows.push({ bench: 'api', figure: '304 path', value: notModified.rps, unit: 'req/s', target: 'reported' });
  return ok(rows);
}

/** `npm run bench:locations`: absolute rates, first import and unchanged re-import. */
export function parseLocations(out: string): BenchRow[] {
  const rate = (label: string) => num(new RegExp(`${label}\\s+[\\d.]+ s\\s+([\\d,]+) rows/s`).exec(out)?.[1]);
  const first = rate('first import');
  const again = rate('unchanged re-import');
  return ok([
    {
      bench: 'locations',
      figure: 'first import',
      value: first,
      unit: 'rows/s',
      target: '>= 20,000 rows/s',
      met: first >= 20_000,
    },
    {
      bench: 'locations',
      figure: 'unchanged re-import',
      value: again,
      unit: 'rows/s',
      target: '>= 40,000 rows/s',
      met: again >= 40_000,
    },
  ]);
}

/** `npm run bench:locations-cpu`: the JavaScript part of a location import, per row (no target). */
export function parseLocationsCpu(out: string): BenchRow[] {
  const stage = (name: string) => num(new RegExp(`^${name}\\s+([\\d.]+) µs CPU/row`, 'm').exec(out)?.[1]);
  return ok(
    (['read', 'normalize', 'encode'] as const).map((name) => ({
      bench: 'locations-cpu',
      figure:
        name === 'read'
          ? 'read (CSV)'
          : `read + ${name === 'encode' ? 'normalize + merge/hash' : 'normalize'}`,
      value: stage(name),
      unit: 'µs CPU/row',
      target: '-',
    })),
  );
}

/** The last top-level JSON object a benchmark printed (pretty-printed over several lines). */
export function lastJsonObject(out: string): unknown {
  const lines = out.split('\n');
  for (let start = lines.length - 1; start >= 0; start--) {
    if (lines[start] !== '{') continue;
    const end = lines.findIndex((l, i) => i > start && l === '}');
    if (end < 0) continue;
    try {
      return JSON.parse(lines.slice(start, end + 1).join('\n'));
    } catch {
      // not JSON after all; keep looking further up
    }
  }
  return undefined;
}

/** `npm run bench:register`: the figures of its final JSON object, against the search stage's targets. */
export function parseRegister(out: string): BenchRow[] {
  const json = lastJsonObject(out) as { registerBench?: Record<string, number> } | undefined;
  const f = json?.registerBench ?? {};
  const v = (k: string) => num(f[k] === undefined ? undefined : String(f[k]));
  const row = (
    figure: string,
    value: number,
    unit: string,
    target: string,
    met: boolean,
    extra: Partial<BenchRow> = {},
  ): BenchRow => ({
    bench: 'register',
    figure,
    value,
    unit,
    target,
    met,
    ...extra,
  });
  // pg_trgm against the API on the same queries: the mix's first few when `--pg-queries` took fewer.
  const pgSide = f.apiP99OnPgQueriesMs === undefined ? v('p99Ms') : v('apiP99OnPgQueriesMs');
  return ok([
    row('index bytes per Org', v('bytesPerOrg'), 'B', '<= 700 B', v('bytesPerOrg') <= 700),
    row('rebuild vs plain word index', v('rebuildS'), 's', '<= 2 x plain', v('rebuildS') <= 2 * v('plainS'), {
      baseline: v('plainS'),
      ratio: v('rebuildS') / v('plainS'),
    }),
    row('Meilisearch peak RSS', v('meiliPeakRssMiB'), 'MiB', '<= 6144 MiB', v('meiliPeakRssMiB') <= 6144),
    row(
      'API search p99 (hard mix)',
      v('p99Ms'),
      'ms',
      '<= 50 ms, >= 10 x faster than pg_trgm',
      v('p99Ms') <= 50 && v('pgP99Ms') >= 10 * pgSide,
      {
        baseline: v('pgP99Ms'),
        ratio: pgSide / v('pgP99Ms'),
      },
    ),
    row('API search slowest', v('maxMs'), 'ms', '<= 200 ms', v('maxMs') <= 200),
    row('totals differing from brute force', v('totalsWrong'), '', '0', v('totalsWrong') === 0),
    row('rename searchable p50', v('renameP50Ms'), 'ms', '<= 2000 ms', v('renameP50Ms') <= 2000),
  ]);
}

/**
 * `npm run bench:events`: its final JSON object. Pages of 1,000 at random cursors (target p99 <= 25
 * ms), and the month-later `--full` import and an unchanged re-import with the event triggers on
 * against off (targets <= 1.10 x, and nothing measurable: within 5 %).
 */
export function parseEvents(out: string): BenchRow[] {
  const json = lastJsonObject(out) as { eventsBench?: Record<string, number> } | undefined;
  const f = json?.eventsBench ?? {};
  const v = (k: string) => num(f[k] === undefined ? undefined : String(f[k]));
  const page = (figure: string, key: string, target = true): BenchRow => ({
    bench: 'events',
    figure,
    value: v(key),
    unit: 'ms',
    target: target ? '<= 25 ms' : '-',
    ...(target ? { met: v(key) <= 25 } : {}),
  });
  const cost = (figure: string, on: string, off: string, limit: number, target: string): BenchRow => ({
    bench: 'events',
    figure,
    value: v(on),
    unit: 's',
    baseline: v(off),
    ratio: v(on) / v(off),
    target,
    met: v(on) / v(off) <= limit,
  });
  return ok([
    page('page of 1,000 p99, read model', 'readP99Ms'),
    page('page of 1,000 p99, read model, types=org.*', 'readTypeP99Ms'),
    page('page p99, read model, types=location.closed', 'readRareP99Ms', false),
    page('GET /v1/events p99 (1,000)', 'apiP99Ms'),
    page('GET /v1/events?types=org.* p99 (1,000)', 'apiTypeP99Ms'),
    cost('month-later --full import, events on', 'monthOnS', 'monthOffS', 1.1, '<= 1.10 x events off'),
    cost('unchanged re-import, events on', 'unchangedOnS', 'unchangedOffS', 1.05, '<= 1.05 x events off'),
  ]);
}

/** `npm run bench:webhooks`: its final JSON object; the targets are issue 48's. */
export function parseWebhooks(out: string): BenchRow[] {
  const json = lastJsonObject(out) as { webhooksBench?: Record<string, number | boolean> } | undefined;
  const f = json?.webhooksBench ?? {};
  const v = (k: string) => (typeof f[k] === 'number' ? (f[k] as number) : Number.NaN);
  const inOrder = (k: string) => f[k] === true;
  return ok([
    {
      bench: 'webhooks',
      figure: 'burst to one batched receiver',
      value: v('batchedSeconds'),
      unit: 's',
      target: '<= 30 s, every event in order',
      met: v('batchedSeconds') <= 30 && inOrder('batchedInOrder'),
    },
    {
      bench: 'webhooks',
      figure: 'unbatched receivers together',
      value: v('unbatchedPerSecond'),
      unit: 'deliveries/s',
      target: '>= 1,000/s, each in order',
      met: v('unbatchedPerSecond') >= 1_000 && inOrder('unbatchedInOrder'),
    },
    {
      bench: 'webhooks',
      figure: 'receiver down for the burst, caught up after',
      value: v('downCatchUpSeconds'),
      unit: 's',
      target: 'every event in order',
      met: inOrder('downInOrder'),
    },
    {
      bench: 'webhooks',
      figure: 'worker peak RSS',
      value: v('workerPeakMiB'),
      unit: 'MiB',
      target: '< 512 MB',
      met: v('workerPeakMiB') * 2 ** 20 < 512e6,
    },
  ]);
}

export const PARSERS: Record<string, (out: string) => BenchRow[]> = {
  import: parseImport,
  api: parseApi,
  locations: parseLocations,
  'locations-cpu': parseLocationsCpu,
  register: parseRegister,
  events: parseEvents,
  webhooks: parseWebhooks,
};

const fmt = (n: number | undefined, digits = 2) =>
  n === undefined || !Number.isFinite(n)
    ? '-'
    : Math.abs(n) >= 1000
      ? Math.round(n).toLocaleString('en')
      : String(+n.toFixed(digits));

/** One plain-text table; a benchmark that failed or printed nothing gets one line saying so. */
export function renderTable(rows: BenchRow[], failures: Array<{ bench: string; reason: string }>): string {
  const cells = [
    ['benchmark', 'figure', 'measured', 'baseline', 'ratio', 'target', 'met'],
    ...rows.map((r) => [
      r.bench,
      r.figure,
      `${fmt(r.value)} ${r.unit}`,
      r.baseline === undefined ? '-' : `${fmt(r.baseline)} ${r.unit}`,
      r.ratio === undefined ? '-' : `${fmt(r.ratio)} x`,
      r.target,
      r.met === undefined ? '' : r.met ? 'yes' : 'NO',
    ]),
    ...failures.map((f) => [f.bench, `(no figures: ${f.reason})`, '', '', '', '', '']),
  ];
  const widths = cells[0]!.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return cells
    .map((row) =>
      row
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
