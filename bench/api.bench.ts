import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { createAccount } from '../api/accounts/account.service.js';
import { createImportRun } from '../ingest/import-runs/import-runs.state.js';
import { runImport } from '../ingest/run/run-import.js';
import { createDb, migrateToLatest } from '../shared/db.js';
import { uidOf } from '../shared/org-domains.read-model.js';
import { LOCAL_PG_ADMIN_URL, LOCAL_REDIS_URL, runStatement } from './local-services.js';
import { HEADER, row } from './location-sheet.js';
import { writeRegistrarFile } from './registrar-generate.js';

/**
 * API benchmark: `npm run bench:api [-- <orgs> <seconds> <rounds>]` (default 100,000 Orgs from the
 * register plus 20,000 Locations of 5,000 more Orgs from a location sheet, 3 rounds of 10 s per side).
 *
 *   (a) a bare Fastify route doing one primary-key lookup,
 *       `select row_to_json(o) from orgs o where id = bizdir_uid_id($1) and bizdir_uid(id) = $1` (`locations` and its `uid` column for a Location)
 *   (b) GET /v1/org/{domain} and GET /v1/location/{domain} through the real app with a real key whose
 *       account has a rate limit (auth, rate limit, credits and ledger, ETag), over the same domains
 *   (c) the 304 path: (b) with If-None-Match carrying each record's current ETag
 *
 * All with autocannon, 32 connections, random stable domains from a sample of 1,000 records of each
 * kind (half of the Orgs registered, half with Locations), servers in their own processes. Records
 * are loaded through the real importers. Own database (created and dropped) and Redis prefix.
 * Env: BENCH_PG_ADMIN_URL (default: the local Postgres, bench/local-services.ts), REDIS_URL.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.argv[2] ?? 100_000);
const SECONDS = Number(process.argv[3] ?? 10);
/** The sides alternate, so load from other work on a shared machine falls on all alike. */
const ROUNDS = Number(process.argv[4] ?? 3);
const LOCATION_ROWS = Math.min(20_000, Math.max(1_000, Math.floor(N / 5)));
const LOCATION_ORGS = Math.floor(LOCATION_ROWS / 4);
const SAMPLE = 1_000;
const CONNECTIONS = 32;
const ADMIN = process.env.BENCH_PG_ADMIN_URL ?? LOCAL_PG_ADMIN_URL;
const REDIS = process.env.REDIS_URL ?? LOCAL_REDIS_URL;
const SUFFIX = 'bizdir.test';
const tag = `${process.pid}_${Date.now().toString(36)}`;
const dbName = `bizdir_bench_api_${tag}`;
const dbUrl = (() => {
  const u = new URL(ADMIN);
  u.pathname = `/${dbName}`;
  return u.toString();
})();
const prefix = `bizdir-bench-${tag}`;

const admin = (text: string) => runStatement(ADMIN, text);

interface Server {
  child: ChildProcess;
  port: number;
}

function startServer(mode: 'bare' | 'app'): Promise<Server> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'bench/api-bench-server.ts'), mode],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: dbUrl,
        REDIS_URL: REDIS,
        QUEUE_PREFIX: prefix,
        DOMAIN_SUFFIX: SUFFIX,
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      const m = /listening (\d+)/.exec(d.toString());
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.on('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
  });
}

interface Figures {
  rps: number;
  /** CPU time of the server process per request: steadier than req/s on a shared machine. */
  cpuUs: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

/** utime + stime of a process in microseconds (Linux /proc; 0 elsewhere). */
function cpuTimeUs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / 100; // clock ticks at USER_HZ 100
  } catch {
    return 0;
  }
}

interface Target {
  path: string;
  headers?: Record<string, string>;
}

async function load(server: Server, targets: Target[], seconds: number): Promise<Figures> {
  const cpuBefore = cpuTimeUs(server.child.pid);
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        setupRequest: (req) => {
          const t = targets[Math.floor(Math.random() * targets.length)]!;
          return { ...req, method: 'GET', path: t.path, headers: { ...req.headers, ...t.headers } };
        },
      },
    ],
  });
  const cpu = cpuTimeUs(server.child.pid) - cpuBefore;
  return {
    rps: result.requests.average,
    cpuUs: result.requests.total > 0 ? cpu / result.requests.total : 0,
    p50: result.latency.p50,
    p99: result.latency.p99,
    // autocannon counts a 304 as non-2xx; the 304 side reports the statuses it expects separately.
    non2xx: result.non2xx - (result['3xx'] ?? 0),
    errors: result.errors,
  };
}

const fmt = (f: Figures) =>
  `${Math.round(f.rps).toString().padStart(7)} req/s   p50 ${f.p50.toFixed(1).padStart(5)} ms   p99 ${f.p99
    .toFixed(1)
    .padStart(
      5,
    )} ms   server CPU ${Math.round(f.cpuUs).toString().padStart(4)} us/req   non-2xx/3xx ${f.non2xx}   errors ${f.errors}`;

/** A random sample of `n` items (the whole list when shorter). */
function sample<T>(items: T[], n: number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, n);
}

await admin(`create database ${dbName}`);
const dir = mkdtempSync(path.join(tmpdir(), 'bizdir-bench-api-'));
try {
  const { db, close } = createDb(dbUrl, { max: 4 });
  await migrateToLatest(db);
  const file = path.join(dir, 'registrar.csv');
  await writeRegistrarFile(file, N);
  const sheet = path.join(dir, 'locations.csv');
  const lines = [HEADER];
  for (let i = 0; i < LOCATION_ROWS; i++) lines.push(row(i, LOCATION_ORGS));
  writeFileSync(sheet, `${lines.join('\n')}\n`);
  const t = Date.now();
  const registrar = await createImportRun(db, {
    feed: 'registrar',
    parts: [{ source: file, entry: null }],
    options: { country: 'GB' },
  });
  await runImport({ db, config: { domainSuffix: SUFFIX } }, registrar.id);
  const locationRun = await createImportRun(db, {
    feed: 'locations',
    parts: [{ source: sheet, entry: null }],
    options: {},
  });
  await runImport({ db, config: { domainSuffix: SUFFIX } }, locationRun.id);
  const registered = await db
    .selectFrom('orgs')
    .select([uidOf('orgs').as('uid'), 'domain_cc'])
    .where('registration_number', 'is not', null)
    .execute();
  const named = await db
    .selectFrom('orgs')
    .select([uidOf('orgs').as('uid'), 'domain_cc'])
    .where('registration_number', 'is', null)
    .execute();
  const locations = await db.selectFrom('locations').select(['uid', 'domain_cc']).execute();
  console.log(
    `loaded ${registered.length} registered Orgs, ${named.length} Orgs with ${locations.length} Locations ` +
      `through the importers in ${((Date.now() - t) / 1000).toFixed(1)} s`,
  );
  const orgDomains = [...sample(registered, SAMPLE / 2), ...sample(named, SAMPLE / 2)].map(
    (r) => `${r.uid}.${r.domain_cc}.${SUFFIX}`,
  );
  const locationDomains = sample(locations, SAMPLE).map((r) => `${r.uid}.loc.${r.domain_cc}.${SUFFIX}`);
  const account = await createAccount(db, {
    name: 'bench',
    credits: 2_000_000_000,
    anchorDate: '2026-01-01',
    // A limit no run reaches, so the rate-limit path is measured, never refused.
    rateLimit: { max: 1_000_000_000, windowSeconds: 3600 },
  });
  await close();
  // Fresher statistics for the planner only: a vacuum refused (a concurrent one, say) changes no figure's meaning.
  await admin(`vacuum analyze`).catch((err) =>
    console.error(`vacuum analyze skipped: ${(err as Error).message}`),
  );

  const servers = { bare: await startServer('bare'), app: await startServer('app') };
  const key = `?api_key=${account.api_key}`;
  const orgPaths = orgDomains.map((d) => `/v1/org/${d}`);
  const locationPaths = locationDomains.map((d) => `/v1/location/${d}`);
  // The current ETag of each sampled record, for the 304 side.
  const etags: Target[] = [];
  for (const p of [...orgPaths, ...locationPaths]) {
    const res = await fetch(`http://127.0.0.1:${servers.app.port}${p}${key}`);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${p}: ${res.status}`);
    etags.push({ path: `${p}${key}`, headers: { 'if-none-match': res.headers.get('etag')! } });
  }
  const sides = {
    'bare org': { server: servers.bare, targets: orgPaths.map((p) => ({ path: p })) },
    'GET /v1/org/{domain}': { server: servers.app, targets: orgPaths.map((p) => ({ path: `${p}${key}` })) },
    'bare location': { server: servers.bare, targets: locationPaths.map((p) => ({ path: p })) },
    'GET /v1/location/{domain}': {
      server: servers.app,
      targets: locationPaths.map((p) => ({ path: `${p}${key}` })),
    },
    '304 (If-None-Match)': { server: servers.app, targets: etags },
  } as const;
  type Side = keyof typeof sides;
  const names = Object.keys(sides) as Side[];
  try {
    for (const name of names) await load(sides[name].server, sides[name].targets, 2); // warm-up
    const runs = Object.fromEntries(names.map((n) => [n, [] as Figures[]])) as Record<Side, Figures[]>;
    console.log(
      `\n${CONNECTIONS} connections, random stable domains of ${SAMPLE} Orgs and ${SAMPLE} Locations, ` +
        `${ROUNDS} rounds of ${SECONDS} s per side`,
    );
    console.log(
      `load average before: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} (${cpus().length} CPUs, shared)`,
    );
    for (let round = 1; round <= ROUNDS; round++) {
      for (const name of names) {
        const f = await load(sides[name].server, sides[name].targets, SECONDS);
        runs[name].push(f);
        console.log(`  round ${round} ${name.padEnd(26)} ${fmt(f)}`);
      }
    }
    const mean = (fs: Figures[], k: keyof Figures) => fs.reduce((n, f) => n + f[k], 0) / fs.length;
    const summary = (fs: Figures[]): Figures => ({
      rps: mean(fs, 'rps'),
      cpuUs: mean(fs, 'cpuUs'),
      p50: mean(fs, 'p50'),
      p99: mean(fs, 'p99'),
      non2xx: mean(fs, 'non2xx'),
      errors: mean(fs, 'errors'),
    });
    const m = Object.fromEntries(names.map((n) => [n, summary(runs[n])])) as Record<Side, Figures>;
    console.log(
      `load average after:  ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    console.log(`\nmean of ${ROUNDS} rounds`);
    for (const name of names) console.log(`${name.padEnd(26)} ${fmt(m[name])}`);
    const orgRatio = m['GET /v1/org/{domain}'].rps / m['bare org'].rps;
    const locRatio = m['GET /v1/location/{domain}'].rps / m['bare location'].rps;
    console.log(
      `\nratio GET /v1/org/{domain} / bare      = ${orgRatio.toFixed(2)}   p99 ${m['GET /v1/org/{domain}'].p99.toFixed(1)} ms`,
    );
    console.log(
      `ratio GET /v1/location/{domain} / bare = ${locRatio.toFixed(2)}   p99 ${m['GET /v1/location/{domain}'].p99.toFixed(1)} ms`,
    );
    console.log('(targets: ratio >= 0.5, p99 <= 25 ms)');
    console.log(
      `304 path: ${Math.round(m['304 (If-None-Match)'].rps)} req/s, p99 ${m['304 (If-None-Match)'].p99.toFixed(1)} ms ` +
        `(${(m['304 (If-None-Match)'].rps / m['bare org'].rps).toFixed(2)} x the bare Org route)`,
    );
  } finally {
    for (const { child } of Object.values(servers)) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  await admin(`drop database if exists ${dbName} with (force)`);
  const redis = new Redis(REDIS);
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
}
