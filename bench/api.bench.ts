import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createAccount } from '../api/accounts/account.service.js';
import { createRun } from '../ingest/import-runs.repository.js';
import { runImport } from '../ingest/run-import.js';
import { createDb, migrateToLatest } from '../shared/db.js';
import { writeRegistrarFile } from './registrar-generate.js';

/**
 * API benchmark: `npm run bench:api [-- <orgs> <seconds> <rounds>]` (default 100,000 Orgs, 3 rounds of
 * 10 s per side).
 *
 *   (a) a bare Fastify route doing the same single indexed Org query, no auth or credits
 *   (b) GET /v1/org/{domain} through the real app with a real key (auth, credits, ledger, schemas)
 *
 * Both with autocannon, 32 connections, random stable domains of the loaded Orgs, servers in their own
 * processes. Orgs are loaded through the real registrar importer. Own database (created and dropped)
 * and Redis prefix. Env: BENCH_PG_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres), REDIS_URL.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.argv[2] ?? 100_000);
const SECONDS = Number(process.argv[3] ?? 10);
/** (a) and (b) alternate, so load from other work on a shared machine falls on both alike. */
const ROUNDS = Number(process.argv[4] ?? 3);
const CONNECTIONS = 32;
const ADMIN = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const SUFFIX = 'bizdir.test';
const tag = `${process.pid}_${Date.now().toString(36)}`;
const dbName = `bizdir_bench_api_${tag}`;
const dbUrl = (() => {
  const u = new URL(ADMIN);
  u.pathname = `/${dbName}`;
  return u.toString();
})();
const prefix = `bizdir-bench-${tag}`;

async function admin(sqlText: string) {
  const c = new pg.Client({ connectionString: ADMIN });
  await c.connect();
  try {
    await c.query(sqlText);
  } finally {
    await c.end();
  }
}

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

async function load(server: Server, domains: string[], query: string, seconds: number): Promise<Figures> {
  const cpuBefore = cpuTimeUs(server.child.pid);
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        setupRequest: (req) => {
          const domain = domains[Math.floor(Math.random() * domains.length)]!;
          return { ...req, method: 'GET', path: `/v1/org/${domain}${query}` };
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
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

const fmt = (f: Figures) =>
  `${Math.round(f.rps).toString().padStart(7)} req/s   p50 ${f.p50.toFixed(1).padStart(5)} ms   p99 ${f.p99
    .toFixed(1)
    .padStart(
      5,
    )} ms   server CPU ${Math.round(f.cpuUs).toString().padStart(4)} us/req   non-2xx ${f.non2xx}   errors ${f.errors}`;

await admin(`create database ${dbName}`);
const dir = mkdtempSync(path.join(tmpdir(), 'bizdir-bench-api-'));
try {
  const { db, close } = createDb(dbUrl, { max: 4 });
  await migrateToLatest(db);
  const file = path.join(dir, 'registrar.csv');
  await writeRegistrarFile(file, N);
  const t = Date.now();
  const run = await createRun(db, { feed: 'registrar', source: file, options: { country: 'GB' } });
  await runImport({ db }, run.id);
  const rows = await db.selectFrom('orgs').select(['uid', 'domain_cc']).execute();
  console.log(
    `loaded ${rows.length} Orgs through the registrar importer in ${((Date.now() - t) / 1000).toFixed(1)} s`,
  );
  const domains = rows.map((r) => `${r.uid}.${r.domain_cc}.${SUFFIX}`);
  const account = await createAccount(db, {
    name: 'bench',
    credits: 2_000_000_000,
    anchorDate: '2026-01-01',
  });
  await close();
  await admin(`vacuum analyze`).catch(() => {});

  const servers = { bare: await startServer('bare'), app: await startServer('app') };
  const query = { bare: '', app: `?api_key=${account.api_key}` };
  try {
    for (const mode of ['bare', 'app'] as const) await load(servers[mode], domains, query[mode], 3); // warm-up
    const runs: Record<'bare' | 'app', Figures[]> = { bare: [], app: [] };
    console.log(
      `\n${CONNECTIONS} connections, random stable domains of ${rows.length} Orgs, ${ROUNDS} rounds of ${SECONDS} s per side`,
    );
    console.log(
      `load average before: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} (${cpus().length} CPUs, shared)`,
    );
    for (let round = 1; round <= ROUNDS; round++) {
      for (const mode of ['bare', 'app'] as const) {
        const f = await load(servers[mode], domains, query[mode], SECONDS);
        runs[mode].push(f);
        console.log(`  round ${round} ${mode === 'bare' ? '(a)' : '(b)'} ${fmt(f)}`);
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
    const a = summary(runs.bare);
    const b = summary(runs.app);
    console.log(
      `load average after:  ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    console.log(`\nmean of ${ROUNDS} rounds`);
    console.log(`(a) bare route, same query   ${fmt(a)}`);
    console.log(`(b) GET /v1/org/{domain}     ${fmt(b)}`);
    console.log(`ratio (b)/(a) = ${(b.rps / a.rps).toFixed(2)}   (target >= 0.6; p99 target < 25 ms)`);
    console.log(`server CPU per request (b)/(a) = ${(b.cpuUs / a.cpuUs).toFixed(2)}`);
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
