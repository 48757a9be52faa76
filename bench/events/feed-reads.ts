import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { createAccount } from '../../api/accounts/account.service.js';
import { buildApp } from '../../api/app.js';
import { type EventFilter, readEvents } from '../../events/feed.read-model.js';
import { loadConfig } from '../../shared/config.js';
import type { Db } from '../../shared/db.js';

/**
 * Part (a) of bench:events: pages of 1,000 events at random cursors with `count` events retained,
 * through the read model (readEvents) and through GET /v1/events (a real app on a port: key,
 * rate limit, credits, serialization), unfiltered and with type filters.
 */

export interface Latencies {
  p50: number;
  p95: number;
  p99: number;
  max: number;
  /** Events per page, on average (a filtered page may hold fewer than 1,000). */
  events: number;
}

const SUFFIX = 'bizdir.test';

/** The share of each type in the synthetic feed: a month-later register burst and location sheets. */
const MIX = `case
  when g % 100 < 30 then 'org.updated'
  when g % 100 < 45 then 'address.updated'
  when g % 100 < 60 then 'org.created'
  when g % 100 < 75 then 'address.created'
  when g % 100 < 82 then 'org.left_register'
  when g % 100 < 90 then 'location.updated'
  when g % 100 < 97 then 'location.created'
  when g % 100 < 99 then 'location.closed'
  else 'import.completed' end`;

/**
 * Inserts `count` events as the triggers would have written them (the stored `data` of each type),
 * in transactions of about `perTransaction` events, with transaction ids below the current one (so
 * every event is visible), created over the last 40 days; then VACUUM ANALYZE, as autovacuum leaves
 * a table of old events.
 */
export async function fillEvents(db: Db, count: number, log: (line: string) => void): Promise<void> {
  const { rows } = await sql<{ now: string }>`select pg_current_xact_id()::text as now`.execute(db);
  const current = Number(rows[0]!.now);
  // Import chunks write thousands of events each; fewer transactions if the server is young.
  const transactions = Math.max(1, Math.min(Math.floor(count / 1_000), current - 100));
  const step = 1_000_000;
  for (let from = 1; from <= count; from += step) {
    const to = Math.min(count, from + step - 1);
    const t = Date.now();
    await sql`
      insert into events (xid, type, created, org_id, run_id, data)
      select (3 + (g::bigint * ${transactions} / (${count}::bigint + 1)))::text::xid8, t.type,
        now() - interval '40 days' * (1 - g::float8 / ${count}), (g % 1000000) + 1, g / 100000,
        case
          when t.type like 'org.%' then jsonb_build_object('cc', 'gb', 'slug', 'generated-company-' || g || '-ltd',
            'version_number', 2 + g % 5, 'changed', jsonb_build_array('informal_name', 'name', 'public_domain'))
          when t.type like 'address.%' then jsonb_build_object('id', g, 'cc', 'gb', 'version_number', 2 + g % 3,
            'changed', jsonb_build_array('line1', 'city'), 'org_cc', 'gb')
          when t.type like 'location.%' then jsonb_build_object('uid', lpad(to_hex(g), 8, '0'), 'cc', 'gb',
            'slug', 'generated-company-' || g || '-town', 'version_number', 2, 'changed', jsonb_build_array('hours'),
            'org_cc', 'gb')
          else jsonb_build_object('run_id', g / 100000, 'feed', 'registrar', 'status', 'succeeded')
        end
      from generate_series(${from}::bigint, ${to}::bigint) g
      cross join lateral (select ${sql.raw(MIX)} as type) t`.execute(db);
    log(`  events ${to.toLocaleString('en')} of ${count.toLocaleString('en')} (${Date.now() - t} ms)`);
  }
  await sql`vacuum analyze events`.execute(db);
}

/** `n` cursors at random places in the feed (a reader anywhere in the retained window). */
export async function randomCursors(db: Db, n: number, seed: number): Promise<string[]> {
  const { rows } = await sql<{ max: number }>`select max(seq) as max from events`.execute(db);
  const max = Number(rows[0]!.max);
  let s = seed >>> 0;
  const seqs = Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return 1 + Math.floor((s / 2 ** 32) * Math.max(1, max - 2_000));
  });
  const { rows: found } = await sql<{ id: string }>`
    select xid::text || '-' || seq as id from events where seq = any(${seqs}::bigint[])`.execute(db);
  return found.map((r) => r.id);
}

export function latencies(samples: readonly number[], events: readonly number[]): Latencies {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
  return {
    p50: at(0.5),
    p95: at(0.95),
    p99: at(0.99),
    max: sorted.at(-1)!,
    events: events.reduce((a, b) => a + b, 0) / Math.max(1, events.length),
  };
}

/** Pages of `limit` at each cursor through the read model, timed one after another. */
export async function timeReadModel(
  db: Db,
  cursors: readonly string[],
  filter: EventFilter,
  limit = 1_000,
): Promise<Latencies> {
  const samples: number[] = [];
  const sizes: number[] = [];
  for (const cursor of cursors.slice(0, 10))
    await readEvents(db, cursor, limit, filter, { domainSuffix: SUFFIX });
  for (const cursor of cursors) {
    const t = performance.now();
    const page = await readEvents(db, cursor, limit, filter, { domainSuffix: SUFFIX });
    samples.push(performance.now() - t);
    sizes.push(page.events.length);
  }
  return latencies(samples, sizes);
}

/** A real API on a free port over the bench database, and a key with credits enough for the run. */
export async function startApi(dbUrl: string, redisUrl: string, prefix: string) {
  const config = loadConfig({
    DATABASE_URL: dbUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    DOMAIN_SUFFIX: SUFFIX,
    LOG_LEVEL: 'silent',
  });
  const app = await buildApp({ config });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const key = (
    await createAccount(app.db, { name: 'bench', credits: 1_000_000_000, anchorDate: '2026-01-01' })
  ).api_key;
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return { app, key, base };
}

/** GET /v1/events at each cursor, timed from the request to the last byte of the body. */
export async function timeApi(
  api: { base: string; key: string },
  cursors: readonly string[],
  query: string,
): Promise<Latencies> {
  const url = (cursor: string) =>
    `${api.base}/v1/events?after=${cursor}&limit=1000${query}&api_key=${encodeURIComponent(api.key)}`;
  for (const cursor of cursors.slice(0, 10)) await (await fetch(url(cursor))).text();
  const samples: number[] = [];
  const sizes: number[] = [];
  for (const cursor of cursors) {
    const t = performance.now();
    const res = await fetch(url(cursor));
    const body = await res.text();
    samples.push(performance.now() - t);
    if (res.status !== 200) throw new Error(`GET /v1/events: ${res.status} ${body.slice(0, 200)}`);
    sizes.push((JSON.parse(body) as { events: unknown[] }).events.length);
  }
  return latencies(samples, sizes);
}
