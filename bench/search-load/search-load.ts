import { sql } from 'kysely';
import type { Meilisearch } from 'meilisearch';
import { succeeded } from '../../search/meili-client.js';
import { foldName } from '../../search/name-text.js';
import type { Db } from '../../shared/db.js';
import { bizdirUid } from '../../shared/domains.js';
import { bruteForce, distinctMix, LIMIT, type LoadQuery, skewedMix } from './load-mix.js';
import { describe, type LoadRequest, type LoadResult, pct, runLoad, summary } from './load-run.js';

/**
 * `bench:register --load`: the search under load, against a plain Meilisearch search on the same
 * machine in the same run. 16 connections (kept alive) ask ≥ 20,000 distinct queries of the hard
 * mix (load-mix.ts) through the API (`bizdir serve`: auth, credits, the exact search, the Orgs from
 * Postgres), and the same terms and offsets of a plain index of `{id, name}` with default settings
 * (`q`, `offset`, `limit` only) built beside it. Also: where a query's time goes by kind (the API's
 * detailed Server-Timing), the CPU each process spent per request, the API's floor (a trivial
 * route, GET /v1/org/{domain}, under the same load), and a skewed mix (a few queries repeated
 * often) reported apart, where a cache of answers would show.
 */
export interface SearchLoadDeps {
  db: Db;
  meili: Meilisearch;
  meiliUrl: string;
  meiliKey: string;
  tag: string;
  orgs: number;
  apiOrigin: string;
  apiKey: string;
  adminToken: string;
  domainSuffix: string;
  pids: { api: number; meilisearch: number };
  /** Starts another API process with extra settings (stopped with the run's other processes). */
  startApi: (env: Record<string, string>) => Promise<{ origin: string; pid: number }>;
  report: (label: string, value: string) => void;
  figures: Record<string, number>;
}

export interface SearchLoadOptions {
  connections: number;
  queries: number;
  /** Distinct terms whose totals are counted by brute force (every answer with one of them is checked). */
  checkTerms: number;
}

interface ApiRead {
  total: number;
  timing: Record<string, number>;
  calls: number;
  dbReads: number;
}

/** The detailed Server-Timing value: durations by name, and the call counts of `search` and `db`. */
function readTiming(value: string | undefined): Pick<ApiRead, 'timing' | 'calls' | 'dbReads'> {
  const timing: Record<string, number> = {};
  let calls = 0;
  let dbReads = 0;
  for (const metric of (value ?? '').split(',')) {
    const [name, ...params] = metric.trim().split(';');
    const dur = params.find((p) => p.startsWith('dur='));
    if (name && dur) timing[name] = Number(dur.slice(4));
    const count = Number(/desc="(\d+) /.exec(metric)?.[1] ?? 0);
    if (name === 'search') calls = count;
    if (name === 'db') dbReads = count;
  }
  return { timing, calls, dbReads };
}

const median = (xs: number[]) =>
  pct(
    [...xs].sort((a, b) => a - b),
    50,
  );

/** Prepares the step while the names are at hand: the mixes and the brute-force totals of a sample. */
export function prepareSearchLoad(names: readonly string[], o: SearchLoadOptions) {
  const mix = distinctMix(names, o.queries);
  // Warm-up queries of another seed: none of them is in the measured mix's list twice over.
  const warm = distinctMix(names, 300, 99);
  const popular = distinctMix(names, 2_000, 7);
  const skewed = skewedMix(popular, 2_000, Math.min(o.queries, 5_000));
  const sample = new Set<string>();
  for (const m of mix) {
    if (sample.size >= o.checkTerms) break;
    sample.add(foldName(m.q));
  }
  // The skewed mix's most asked queries (most of its answers) are checked too.
  for (const m of popular.slice(0, 100)) sample.add(foldName(m.q));
  const started = performance.now();
  const truth = bruteForce(names, sample);
  return { mix, warm, skewed, truth, bruteMs: performance.now() - started };
}

/** The plain index of `{id, name}` with default settings: built once per kept run, reused after. */
async function plainIndex(d: SearchLoadDeps): Promise<{ uid: string; builtMs?: number }> {
  const uid = `plain_load_${d.tag}`;
  const existing = await d.meili
    .index(uid)
    .getStats()
    .catch(() => undefined);
  if (existing && existing.numberOfDocuments === d.orgs && !existing.isIndexing) return { uid };
  if (existing) await succeeded(d.meili.deleteIndex(uid));
  const t = Date.now();
  await succeeded(d.meili.createIndex(uid, { primaryKey: 'id' }));
  const rows = await d.db.selectFrom('orgs').select(['id', 'name']).orderBy('id').execute();
  const inFlight: Promise<unknown>[] = [];
  for (let i = 0; i < rows.length; i += 20_000) {
    inFlight.push(succeeded(d.meili.index(uid).addDocuments(rows.slice(i, i + 20_000)), 3_600_000));
    if (inFlight.length >= 4) await inFlight.shift();
  }
  await Promise.all(inFlight);
  return { uid, builtMs: Date.now() - t };
}

export async function searchLoad(
  d: SearchLoadDeps,
  o: SearchLoadOptions,
  prep: ReturnType<typeof prepareSearchLoad>,
) {
  const { report, figures } = d;
  report(
    'load: mixes',
    `${prep.mix.length} distinct queries (${[...new Set(prep.mix.map((m) => foldName(m.q)))].length} distinct terms), limit ${LIMIT}, ${o.connections} connections; totals counted by brute force for ${prep.truth.size} terms in ${(prep.bruteMs / 1000).toFixed(1)} s`,
  );
  const plain = await plainIndex(d);
  report(
    'load: plain index',
    plain.builtMs === undefined
      ? `${plain.uid} (kept from an earlier run)`
      : `${plain.uid} built in ${(plain.builtMs / 1000).toFixed(1)} s`,
  );
  const auth = { authorization: `Bearer ${d.adminToken}` };
  const apiReq = (m: LoadQuery): LoadRequest => ({
    path: `/v1/org/search?q=${encodeURIComponent(m.q)}&sort=${m.sort}&offset=${m.offset}&limit=${LIMIT}&api_key=${d.apiKey}`,
    headers: auth,
  });
  const plainReq = (m: LoadQuery): LoadRequest => ({
    path: `/indexes/${plain.uid}/search`,
    method: 'POST',
    body: JSON.stringify({ q: m.q, offset: m.offset, limit: LIMIT }),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${d.meiliKey}` },
  });
  const readApi = (
    status: number,
    headers: Record<string, string | string[] | undefined>,
    body: string,
  ): ApiRead => {
    const total = status === 200 ? (JSON.parse(body) as { orgs: { total: number } }).orgs.total : Number.NaN;
    return { total, ...readTiming(headers['server-timing'] as string | undefined) };
  };
  const readPlain = (status: number) => status;
  // Postgres is shared with other work on the machine: only the backends of this run's database count.
  const watch = async () => {
    const { rows } = await sql<{ pid: number }>`
      select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`.execute(
      d.db,
    );
    return { API: d.pids.api, Meilisearch: d.pids.meilisearch, Postgres: rows.map((r) => r.pid) };
  };
  const api = (qs: readonly LoadQuery[]) =>
    runLoad(d.apiOrigin, qs.map(apiReq), o.connections, readApi, watch);
  const meili = (qs: readonly LoadQuery[]) =>
    runLoad(d.meiliUrl, qs.map(plainReq), o.connections, readPlain, watch);

  // Warm-up of both sides (other queries), so neither pays first touches the other has paid.
  await api(prep.warm);
  await meili(prep.warm);

  // The sides alternate over two halves of the mix, so load from other work on a shared machine
  // falls on both alike.
  const half = Math.ceil(prep.mix.length / 2);
  const [h1, h2] = [prep.mix.slice(0, half), prep.mix.slice(half)];
  const a1 = await api(h1);
  const p1 = await meili(h1);
  // The first half alone, in case the run is stopped before the second.
  report('load: first half, API search', describe(summary(a1)));
  report('load: first half, plain Meilisearch', describe(summary(p1)));
  const p2 = await meili(h2);
  const a2 = await api(h2);
  const join = <R>(x: LoadResult<R>, y: LoadResult<R>): LoadResult<R> => ({
    answers: [...x.answers, ...y.answers],
    wallMs: x.wallMs + y.wallMs,
    cpuMs: Object.fromEntries(Object.entries(x.cpuMs).map(([k, v]) => [k, v + (y.cpuMs[k] ?? 0)])),
  });
  const apiRun = join(a1, a2);
  const plainRun = join(p1, p2);
  const sa = summary(apiRun);
  const sp = summary(plainRun);
  report('load: API search (distinct mix)', describe(sa));
  report('load: plain Meilisearch (same terms and offsets)', describe(sp));
  report(
    'load: API against plain',
    `throughput ${(sa.rps / sp.rps).toFixed(2)}x (target >= 0.5x), p99 ${(sa.p99 / sp.p99).toFixed(2)}x (target <= 2x)`,
  );
  const wrong = checkTotals(prep.mix, apiRun, prep.truth);
  report(
    'load: answers not 200',
    `API ${wrong.not200}, plain ${plainRun.answers.filter((a) => a.read !== 200).length}`,
  );
  report('load: totals differing from brute force', `${wrong.wrong} of ${wrong.checked} checked answers`);
  Object.assign(figures, {
    loadApiRps: sa.rps,
    loadApiP50Ms: sa.p50,
    loadApiP99Ms: sa.p99,
    loadApiMaxMs: sa.max,
    loadPlainRps: sp.rps,
    loadPlainP50Ms: sp.p50,
    loadPlainP99Ms: sp.p99,
    loadPlainMaxMs: sp.max,
    loadRpsRatio: sa.rps / sp.rps,
    loadP99Ratio: sa.p99 / sp.p99,
    loadTotalsWrong: wrong.wrong,
    loadTotalsChecked: wrong.checked,
  });
  byKind(prep.mix, apiRun, report);

  // The API's floor: a trivial metered route (auth, credits, one Org from Postgres) under the same load.
  const { rows } = await sql<{ id: string; domain_cc: string }>`
    select id, domain_cc from orgs order by random() limit 1000`.execute(d.db);
  const domains = rows.map(
    (r) => `/v1/org/${bizdirUid(Number(r.id))}.${r.domain_cc}.${d.domainSuffix}?api_key=${d.apiKey}`,
  );
  const trivial = await runLoad(
    d.apiOrigin,
    Array.from({ length: 3_000 }, (_, i) => ({ path: domains[i % domains.length]! })),
    o.connections,
    (status) => status,
    watch,
  );
  const st = summary(trivial);
  report('load: floor, GET /v1/org/{domain} (trivial metered route)', describe(st));
  figures.loadTrivialRps = st.rps;
  figures.loadTrivialP99Ms = st.p99;

  // The skewed mix: a few queries asked often (a cache of answers shows here, and only here).
  const sk = summary(await api(prep.skewed));
  const skp = summary(await meili(prep.skewed));
  const distinct = new Set(prep.skewed.map((m) => `${m.sort} ${m.offset} ${m.q}`)).size;
  report(`load: API search (skewed mix, ${distinct} distinct queries)`, describe(sk));
  report('load: plain Meilisearch (skewed mix)', describe(skp));
  report(
    'load: skewed, API against plain',
    `throughput ${(sk.rps / skp.rps).toFixed(2)}x, p99 ${(sk.p99 / skp.p99).toFixed(2)}x`,
  );
  figures.loadSkewedApiRps = sk.rps;
  figures.loadSkewedPlainRps = skp.rps;
  // The same skewed mix on an API with the answer cache on, its answers checked like the others.
  const cached = await d.startApi({ SEARCH_ANSWER_CACHE: 'on' });
  const cachedWatch = async () => ({ ...(await watch()), API: cached.pid });
  const run = await runLoad(cached.origin, prep.skewed.map(apiReq), o.connections, readApi, cachedWatch);
  const skc = summary(run);
  const skWrong = checkTotals(prep.skewed, run, prep.truth);
  report('load: API search (skewed mix, SEARCH_ANSWER_CACHE=on)', describe(skc));
  report(
    'load: skewed with the answer cache, against plain',
    `throughput ${(skc.rps / skp.rps).toFixed(2)}x, p99 ${(skc.p99 / skp.p99).toFixed(2)}x; ${skWrong.wrong} of ${skWrong.checked} checked totals differing, ${skWrong.not200} not 200`,
  );
  figures.loadSkewedCachedRps = skc.rps;
}

function checkTotals(mix: readonly LoadQuery[], run: LoadResult<ApiRead>, truth: Map<string, number>) {
  let wrong = 0;
  let checked = 0;
  let not200 = 0;
  for (const [i, a] of run.answers.entries()) {
    if (a.status !== 200) {
      not200++;
      continue;
    }
    const f = foldName(mix[i]!.q);
    const t = truth.get(f);
    if (t === undefined) continue;
    checked++;
    if (t !== a.read.total) {
      wrong++;
      if (wrong <= 10)
        console.log(
          `  total differs: q=${JSON.stringify(mix[i]!.q)} api ${a.read.total} vs brute force ${t}`,
        );
    }
  }
  return { wrong, checked, not200 };
}

/** Where the time of each kind of query goes under load: medians of the API's own account. */
function byKind(mix: readonly LoadQuery[], run: LoadResult<ApiRead>, report: SearchLoadDeps['report']) {
  const groups = new Map<string, { ms: number[]; r: ApiRead[] }>();
  for (const [i, a] of run.answers.entries()) {
    const m = mix[i]!;
    for (const key of [m.kind, `offset ${m.offset}`, `sort ${m.sort}`]) {
      const g = groups.get(key) ?? { ms: [], r: [] };
      g.ms.push(a.ms);
      g.r.push(a.read);
      groups.set(key, g);
    }
  }
  console.log(
    '  by kind (medians, ms): client | in the API (total) | Meilisearch in flight | its own processing | calls | Postgres (reads) | API besides | outside the API; client p99',
  );
  for (const [key, g] of groups) {
    const t = (name: string) => median(g.r.map((r) => r.timing[name] ?? 0));
    const besides = median(
      g.r.map((r) => (r.timing.total ?? 0) - (r.timing.search ?? 0) - (r.timing.db ?? 0)),
    );
    const outside = median(g.r.map((r, i) => g.ms[i]! - (r.timing.total ?? 0)));
    console.log(
      `    ${key} (${g.ms.length}): ${median(g.ms).toFixed(1)} | ${t('total').toFixed(1)} | ${t('search').toFixed(1)} | ${t('search-self').toFixed(1)} | ${median(g.r.map((r) => r.calls))} | ${t('db').toFixed(1)} (${median(g.r.map((r) => r.dbReads))}) | ${besides.toFixed(1)} | ${outside.toFixed(1)}; p99 ${pct(
        [...g.ms].sort((a, b) => a - b),
        99,
      ).toFixed(1)}`,
    );
  }
  report('load: by kind', 'printed above (medians of the detailed Server-Timing)');
}
