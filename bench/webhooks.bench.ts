import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { createAccount } from '../api/accounts/account.service.js';
import {
  createEndpoint,
  type EndpointDeps,
  removeEndpoint,
} from '../api/webhooks/webhook-endpoint.service.js';
import { readEvents } from '../events/feed.read-model.js';
import { createDb, type Db, migrateToLatest } from '../shared/db.js';
import { systemResolver } from '../webhooks/address-guard.js';
import { createEventFeed } from '../webhooks/feed.read-model.js';
import { benchArgs } from './bench-args.js';
import { BIZDIR_ARGS, BIZDIR_HOW, buildBizdir } from './bizdir-cli.js';
import { LOCAL_PG_ADMIN_URL, LOCAL_REDIS_URL, runStatement } from './local-services.js';
import { MemoryWatch } from './process-memory.js';

/**
 * Webhook delivery (issue 48, docs/events.md "Webhooks"):
 *
 *   npm run bench:webhooks -- [--events 33000] [--receivers 10] [--down-seconds 20] [--skip-batched]
 *                             [--skip-unbatched] [--skip-down]
 *
 * A `bizdir worker --queues webhooks` process delivers a burst of `--events` events (the month-later
 * register import at 1M Orgs writes about 33,000; inserted here as that import's transactions would,
 * 1,000 a transaction, with the stored data of each type) to receivers on loopback in this process:
 *
 * (a) one batched endpoint: the time from the burst's first commit to its last event received.
 *     Target: <= 30 s.
 * (b) `--receivers` unbatched endpoints, each its own receiver: deliveries per second, all together.
 *     Target: >= 1,000/s.
 * (c) one batched endpoint whose receiver is down (connection refused) for the whole burst and
 *     `--down-seconds` after it, then comes back: every event, in order, and how long after it came
 *     back (the endpoint's next retry included).
 *
 * Every receiver's events are checked against the feed, in order. The worker's resident memory is
 * sampled throughout (target < 512 MB). Prints figures, the last line one JSON object for `npm run
 * bench` (bench/bench-table.ts parseWebhooks); never fails on a slow machine. Env:
 * BENCH_PG_ADMIN_URL, REDIS_URL, BENCH_WORKER=tsx (from source).
 */
const { flag, count } = benchArgs();
const EVENTS = count('events', 33_000);
const RECEIVERS = count('receivers', 10);
const DOWN_SECONDS = count('down-seconds', 20);
const ADMIN = process.env.BENCH_PG_ADMIN_URL ?? LOCAL_PG_ADMIN_URL;
const REDIS = process.env.REDIS_URL ?? LOCAL_REDIS_URL;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tag = `${process.pid}_${Date.now().toString(36)}`;
const log = (line: string) => console.log(line);
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A receiver on loopback: the ids of the events it got, in the order they came. */
class BenchReceiver {
  readonly ids: string[] = [];
  private server: Server | undefined;
  port = 0;

  async start(port = 0): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          id?: string;
          events?: { id: string }[];
        };
        if (body.events) for (const e of body.events) this.ids.push(e.id);
        else this.ids.push(body.id!);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url() {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** The burst: `count` events in transactions of 1,000, as an import's batches commit them. */
async function insertBurst(db: Db, n: number): Promise<void> {
  for (let from = 1; from <= n; from += 1_000) {
    const to = Math.min(n, from + 999);
    await sql`
      insert into events (type, org_id, data)
      select t.type, g + 1,
        case
          when t.type like 'org.%' then jsonb_build_object('cc', 'gb', 'slug', 'burst-company-' || g || '-ltd',
            'version_number', 2 + g % 5, 'changed', jsonb_build_array('name', 'public_domain'))
          when t.type like 'address.%' then jsonb_build_object('id', g + 1, 'cc', 'gb', 'version_number', 2,
            'changed', jsonb_build_array('line1', 'city'), 'org_cc', 'gb')
          else jsonb_build_object('uid', lpad(to_hex(g), 8, '0'), 'cc', 'gb', 'slug', 'burst-' || g || '-town',
            'version_number', 2, 'changed', jsonb_build_array('hours'), 'org_cc', 'gb')
        end
      from generate_series(${from}::bigint, ${to}::bigint) g
      cross join lateral (select case
        when g % 100 < 35 then 'org.updated' when g % 100 < 55 then 'org.created'
        when g % 100 < 85 then 'address.updated' when g % 100 < 92 then 'org.left_register'
        else 'location.updated' end as type) t`.execute(db);
  }
}

/** The ids of the feed's events after `mark`, in feed order. */
async function feedIds(db: Db, mark: string | null): Promise<string[]> {
  const ids: string[] = [];
  let cursor = mark;
  for (;;) {
    const page = await readEvents(db, cursor, 1_000, {}, { domainSuffix: 'bizdir.test' });
    ids.push(...page.events.map((e) => e.id));
    cursor = page.next_cursor;
    if (!page.has_more) return ids;
  }
}

async function waitFor(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/** CPU time a process has used, in ms (user + system, from /proc). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

const inOrder = (got: readonly string[], expected: readonly string[]) =>
  got.length === expected.length && got.every((id, i) => id === expected[i]);

async function main(): Promise<void> {
  log(`bench:webhooks: ${EVENTS.toLocaleString('en')} events a burst, worker ${BIZDIR_HOW}`);
  buildBizdir();
  const name = `bizdir_bench_webhooks_${tag}`;
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  const prefix = `bizdir-bench-webhooks-${tag}`;
  await runStatement(ADMIN, `create database ${name}`);
  const { db, close } = createDb(url.toString(), { max: 4 });
  let worker: ChildProcess | undefined;
  const results: Record<string, number | boolean> = {};
  try {
    await migrateToLatest(db);
    await createAccount(db, { name: 'bench', credits: 1_000, anchorDate: '2026-01-01' });
    const { id: accountId } = await db.selectFrom('accounts').select('id').executeTakeFirstOrThrow();
    const feed = createEventFeed(db, 'bizdir.test');
    const deps: EndpointDeps = {
      db,
      feed,
      allowPrivate: true,
      maxEndpoints: 1_000,
      resolve: systemResolver,
      now: () => new Date(),
    };
    worker = spawn(process.execPath, [...BIZDIR_ARGS, 'worker', '--queues', 'webhooks'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: url.toString(),
        REDIS_URL: REDIS,
        QUEUE_PREFIX: prefix,
        WEBHOOKS_ALLOW_PRIVATE: 'on',
        WEBHOOKS_CONCURRENCY: String(Math.max(20, RECEIVERS * 2)),
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const memory = new MemoryWatch(worker.pid!);
    await new Promise((r) => setTimeout(r, 3_000));

    if (!flag('skip-batched')) {
      memory.label = '(a) batched';
      const receiver = await new BenchReceiver().start();
      const made = await createEndpoint(deps, accountId, { url: receiver.url, types: ['*'], batch: true });
      const t = Date.now();
      await insertBurst(db, EVENTS);
      const inserted = Date.now() - t;
      const done = await waitFor(() => receiver.ids.length >= EVENTS, 600_000);
      const took = Date.now() - t;
      const ok = done && inOrder(receiver.ids, await feedIds(db, made.endpoint.after_event));
      log(
        `(a) one batched receiver: ${EVENTS.toLocaleString('en')} events in ${secs(took)} from the first commit`,
      );
      log(`    (burst committed in ${secs(inserted)}); every event, in order: ${ok}   target <= 30 s`);
      results.batchedSeconds = took / 1000;
      results.batchedInOrder = ok;
      await removeEndpoint(db, made.endpoint.id);
      await receiver.stop();
    }

    if (!flag('skip-unbatched')) {
      memory.label = '(b) unbatched';
      const receivers = await Promise.all(
        Array.from({ length: RECEIVERS }, () => new BenchReceiver().start()),
      );
      const made = [];
      for (const r of receivers)
        made.push(await createEndpoint(deps, accountId, { url: r.url, types: ['*'], batch: false }));
      const total = EVENTS * RECEIVERS;
      const received = () => receivers.reduce((n, r) => n + r.ids.length, 0);
      const cpu = cpuMs(worker.pid!);
      const t = Date.now();
      await insertBurst(db, EVENTS);
      const done = await waitFor(() => received() >= total, 3_600_000);
      const took = Date.now() - t;
      const expected = await feedIds(db, made[0]!.endpoint.after_event);
      const ok = done && receivers.every((r) => inOrder(r.ids, expected));
      const rate = Math.round(received() / (took / 1000));
      const perDelivery = (cpuMs(worker.pid!) - cpu) / received();
      log(
        `(b) ${RECEIVERS} unbatched receivers: ${received().toLocaleString('en')} deliveries in ${secs(took)}:`,
      );
      log(`    ${rate.toLocaleString('en')} deliveries/s together; each in order: ${ok}   target >= 1,000/s`);
      log(
        `    the worker's CPU: ${perDelivery.toFixed(2)} ms a delivery (a core's worth: ${Math.round(1000 / perDelivery)}/s)`,
      );
      results.unbatchedPerSecond = rate;
      results.unbatchedInOrder = ok;
      results.workerCpuMsPerDelivery = Number(perDelivery.toFixed(3));
      for (const m of made) await removeEndpoint(db, m.endpoint.id);
      for (const r of receivers) await r.stop();
    }

    if (!flag('skip-down')) {
      memory.label = '(c) receiver down';
      // A port nobody listens on until the receiver comes back.
      const probe = await new BenchReceiver().start();
      const port = probe.port;
      await probe.stop();
      const made = await createEndpoint(deps, accountId, {
        url: `http://127.0.0.1:${port}/hook`,
        types: ['*'],
        batch: true,
      });
      const t = Date.now();
      await insertBurst(db, EVENTS);
      // Down for the whole burst and a while after it: the worker meets connection refused, backs off.
      await new Promise((r) => setTimeout(r, DOWN_SECONDS * 1000));
      const state = await db
        .selectFrom('webhook_deliveries')
        .select(['status', 'failures', 'next_attempt_at'])
        .where('endpoint_id', '=', made.endpoint.id)
        .executeTakeFirstOrThrow();
      const receiver = await new BenchReceiver().start(port);
      const back = Date.now();
      const done = await waitFor(() => receiver.ids.length >= EVENTS, 3_600_000);
      const after = Date.now() - back;
      const ok = done && inOrder(receiver.ids, await feedIds(db, made.endpoint.after_event));
      log(
        `(c) receiver down ${secs(back - t)} (endpoint ${state.status}, ${state.failures} failed tries), then up: every event, in order: ${ok},`,
      );
      log(
        `    all ${EVENTS.toLocaleString('en')} in ${secs(after)} after it came back (the next retry is part of it)`,
      );
      results.downInOrder = ok;
      results.downCatchUpSeconds = after / 1000;
      await receiver.stop();
    }

    memory.stop();
    const mib = (b: number) => Math.round(b / 2 ** 20);
    log(`worker resident memory, peak: ${mib(memory.peakTotal)} MiB   target < 512 MB`);
    for (const line of memory.labelLines()) log(`    ${line}`);
    results.workerPeakMiB = mib(memory.peakTotal);
    log(JSON.stringify({ webhooksBench: results }, null, 2));
  } finally {
    if (worker && worker.exitCode === null) {
      const exited = new Promise((r) => worker!.once('exit', r));
      worker.kill('SIGTERM');
      await exited;
    }
    await close();
    await runStatement(ADMIN, `drop database if exists ${name} with (force)`);
    const redis = new Redis(REDIS);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
}

await main();
