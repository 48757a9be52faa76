import { Redis } from 'ioredis';
import { createDb, migrateToLatest } from '../shared/db.js';
import { benchArgs } from './bench-args.js';
import { BIZDIR_HOW, buildBizdir } from './bizdir-cli.js';
import {
  fillEvents,
  type Latencies,
  randomCursors,
  startApi,
  timeApi,
  timeReadModel,
} from './events/feed-reads.js';
import { type ImportTimes, importCost } from './events/import-cost.js';
import { LOCAL_PG_ADMIN_URL, LOCAL_REDIS_URL, runStatement } from './local-services.js';
import { generateNextMonth, generateRegister } from './register/generate.js';

/**
 * The change feed (issue 48, docs/events.md):
 *
 *   npm run bench:events -- [--events 10000000] [--reads 300] [--orgs 1000000] [--rounds 2] [--skip-reads]
 *                           [--skip-imports]
 *
 * (a) `--events` synthetic events retained (inserted with generate_series into a database of the
 *     bench's own), then `--reads` pages of 1,000 at random cursors through the read model and
 *     through GET /v1/events (a real app on a port), unfiltered, with `types=org.*` (most events) and
 *     with `types=location.closed` (1 % of events: a filtered read scans at most 10,000 events).
 *     Target: p99 <= 25 ms.
 * (b) a generated register of `--orgs` companies (bench/register/generate.ts, cached under
 *     /tmp/bizdir-register) imported through a `bizdir worker`, then the same file again, then the
 *     month-later file with `--full` (generateNextMonth), with the event triggers switched off in its
 *     database and as shipped, `--rounds` times each (alternating which side goes first). Targets: the month-later import <= 1.10 x with events
 *     off; the unchanged re-import the same within noise.
 *
 * Prints figures (never fails on a slow machine); the last lines are one JSON object for
 * `npm run bench` (bench/bench-table.ts parseEvents). Env: BENCH_PG_ADMIN_URL, REDIS_URL.
 */
const { flag, count } = benchArgs();
const EVENTS = count('events', 10_000_000);
const READS = count('reads', 300);
const ORGS = count('orgs', 1_000_000);
const ROUNDS = count('rounds', 2);
const ADMIN = process.env.BENCH_PG_ADMIN_URL ?? LOCAL_PG_ADMIN_URL;
const REDIS = process.env.REDIS_URL ?? LOCAL_REDIS_URL;
const tag = `${process.pid}_${Date.now().toString(36)}`;
const log = (line: string) => console.log(line);
const ms = (n: number) => n.toFixed(1);
const show = (label: string, l: Latencies) =>
  log(
    `${label.padEnd(52)} p50 ${ms(l.p50)} ms  p95 ${ms(l.p95)} ms  p99 ${ms(l.p99)} ms  max ${ms(l.max)} ms  (${Math.round(l.events)} events/page)`,
  );

async function feedReads(): Promise<Record<string, number>> {
  const name = `bizdir_bench_events_${tag}_feed`;
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  await runStatement(ADMIN, `create database ${name}`);
  const { db, close } = createDb(url.toString(), { max: 4 });
  const prefix = `bizdir-bench-events-${tag}-api`;
  try {
    await migrateToLatest(db);
    log(`(a) inserting ${EVENTS.toLocaleString('en')} events`);
    const t = Date.now();
    await fillEvents(db, EVENTS, log);
    log(`    inserted and vacuumed in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    const cursors = await randomCursors(db, READS, 48);
    log(
      `(a) ${cursors.length} pages of 1,000 at random cursors, ${EVENTS.toLocaleString('en')} events retained`,
    );
    const rm = await timeReadModel(db, cursors, {});
    show('read model, unfiltered', rm);
    const rmType = await timeReadModel(db, cursors, { types: ['org.*'] });
    show('read model, types=org.*', rmType);
    const rmRare = await timeReadModel(db, cursors, { types: ['location.closed'] });
    show('read model, types=location.closed (1 % of events)', rmRare);
    const api = await startApi(url.toString(), REDIS, prefix);
    try {
      const viaApi = await timeApi(api, cursors, '');
      show('GET /v1/events, unfiltered', viaApi);
      const viaApiType = await timeApi(api, cursors, '&types=org.*');
      show('GET /v1/events?types=org.*', viaApiType);
      const viaApiRare = await timeApi(api, cursors, '&types=location.closed');
      show('GET /v1/events?types=location.closed', viaApiRare);
      return {
        events: EVENTS,
        reads: cursors.length,
        readP99Ms: rm.p99,
        readTypeP99Ms: rmType.p99,
        readRareP99Ms: rmRare.p99,
        apiP99Ms: viaApi.p99,
        apiTypeP99Ms: viaApiType.p99,
        apiRareP99Ms: viaApiRare.p99,
      };
    } finally {
      await api.app.close();
    }
  } finally {
    await close();
    await runStatement(ADMIN, `drop database if exists ${name} with (force)`);
    const redis = new Redis(REDIS);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
}

async function importCosts(): Promise<Record<string, number>> {
  const ms = buildBizdir();
  log(`(b) workers run ${BIZDIR_HOW}${ms > 0 ? ` (built in ${(ms / 1000).toFixed(1)} s)` : ''}`);
  const reg = await generateRegister({ orgs: ORGS, parts: 1, dir: '/tmp/bizdir-register' });
  const next = await generateNextMonth(reg, 1);
  log(`(b) register of ${ORGS.toLocaleString('en')} companies; month later: ${JSON.stringify(next.counts)}`);
  const opts = { admin: ADMIN, redis: REDIS, tag, first: reg.files, month: next.files };
  // Sides alternate between rounds (off then on, then on then off), so neither always runs on a
  // warmer page cache; each figure is the mean over the rounds.
  const offs: ImportTimes[] = [];
  const ons: ImportTimes[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const on of round % 2 === 0 ? [false, true] : [true, false]) {
      (on ? ons : offs).push(await importCost({ ...opts, tag: `${tag}_${round}` }, on, log));
    }
  }
  const mean = (sides: ImportTimes[], k: keyof ImportTimes) =>
    sides.reduce((a, t) => a + t[k], 0) / sides.length;
  const off = {
    monthS: mean(offs, 'monthS'),
    unchangedS: mean(offs, 'unchangedS'),
    firstS: mean(offs, 'firstS'),
  };
  const on = {
    monthS: mean(ons, 'monthS'),
    unchangedS: mean(ons, 'unchangedS'),
    firstS: mean(ons, 'firstS'),
    monthEvents: mean(ons, 'monthEvents'),
    unchangedEvents: mean(ons, 'unchangedEvents'),
  };
  const monthRatio = on.monthS / off.monthS;
  const unchangedRatio = on.unchangedS / off.unchangedS;
  const over = ROUNDS > 1 ? ` (mean of ${ROUNDS} rounds)` : '';
  log(
    `(b) month later --full${over}: events off ${off.monthS.toFixed(1)} s, on ${on.monthS.toFixed(1)} s = ` +
      `${monthRatio.toFixed(3)} x (${on.monthEvents.toLocaleString('en')} events)`,
  );
  log(
    `(b) unchanged re-import${over}: events off ${off.unchangedS.toFixed(1)} s, on ${on.unchangedS.toFixed(1)} s = ` +
      `${unchangedRatio.toFixed(3)} x (${on.unchangedEvents} events)`,
  );
  log(
    `(b) first import (for reference)${over}: events off ${off.firstS.toFixed(1)} s, on ${on.firstS.toFixed(1)} s = ` +
      `${(on.firstS / off.firstS).toFixed(3)} x`,
  );
  return {
    orgs: ORGS,
    monthOffS: off.monthS,
    monthOnS: on.monthS,
    monthEvents: on.monthEvents,
    unchangedOffS: off.unchangedS,
    unchangedOnS: on.unchangedS,
    firstOffS: off.firstS,
    firstOnS: on.firstS,
  };
}

async function main() {
  const figures = {
    ...(flag('skip-reads') ? {} : await feedReads()),
    ...(flag('skip-imports') ? {} : await importCosts()),
  };
  console.log(JSON.stringify({ eventsBench: figures }, null, 2));
}

await main();
