/**
 * Location feed, JavaScript only: the per-row CPU cost of an import without Postgres. The same kind
 * of sheet as bench/locations.bench.ts (100,000 rows, 5,000 Orgs) is generated in memory and run
 * through three cumulative stages, each timed on its own pass over the whole sheet:
 *
 *   read       openCsv over a stream of the text (record scan + papaparse)
 *   normalize  + locationRowNormalizer per row
 *   encode     + mergeLocation / mergeAddress / encodeLocation / contentHash per row, as the loader
 *                does for a new row (nothing stored)
 *
 * Prints CPU µs/row (process CPU time, all threads: steadier than wall time when the machine is
 * busy), wall µs/row and rows/s, and the share of the pass spent in garbage collection, after a
 * warm-up pass; each figure is from the pass with the least CPU time of BENCH_REPS passes. The output digest (md5 of every normalized
 * row, encoded text and hash) must not move when the code is made faster.
 *
 *   npm run bench:locations-cpu
 *   BENCH_ROWS=20000 BENCH_REPS=5 npm run bench:locations-cpu
 *   BENCH_STAGES=read,normalize npm run bench:locations-cpu   # only these stages, no digest
 */
import { createHash } from 'node:crypto';
import { PerformanceObserver } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { openCsv } from '../ingest/csv.js';
import { matchLocationHeaders } from '../ingest/locations/locations.headers.js';
import { locationRowNormalizer, type NormalizedLocation } from '../ingest/locations/locations.normalize.js';
import {
  contentHash,
  encodeLocation,
  mergeAddress,
  mergeLocation,
} from '../ingest/locations/locations.records.js';
import { HEADER, row } from './location-sheet.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const ORGS = Number(process.env.BENCH_ORGS ?? 5_000);
const REPS = Number(process.env.BENCH_REPS ?? 3);
const ALL_STAGES = ['read', 'normalize', 'encode'] as const;
type Stage = (typeof ALL_STAGES)[number];
const STAGES = process.env.BENCH_STAGES
  ? ALL_STAGES.filter((s) => process.env.BENCH_STAGES!.split(',').includes(s))
  : ALL_STAGES;

function sheet(): Buffer {
  const lines = [HEADER];
  for (let i = 0; i < ROWS; i++) lines.push(row(i, ORGS));
  return Buffer.from(`${lines.join('\r\n')}\r\n`, 'utf8');
}

/** The file as a read stream hands it over: 64 KiB chunks. */
function streamOf(buf: Buffer): Readable {
  const chunks: Buffer[] = [];
  for (let i = 0; i < buf.length; i += 64 * 1024) chunks.push(buf.subarray(i, i + 64 * 1024));
  return Readable.from(chunks);
}

type Sink = (row: NormalizedLocation | undefined, fields: readonly string[]) => void;

/** One pass over the sheet up to `stage`; `sink` sees each row's output (for the digest). */
async function pass(buf: Buffer, stage: Stage, sink?: Sink): Promise<number> {
  const csv = await openCsv(streamOf(buf), { batchSize: 5000 });
  const normalize = locationRowNormalizer(matchLocationHeaders(csv.header));
  let rows = 0;
  for await (const batch of csv.batches) {
    for (const rec of batch) {
      rows++;
      if (stage === 'read') {
        sink?.(undefined, rec.fields);
        continue;
      }
      const result = normalize(rec.fields);
      sink?.(result, rec.fields);
      if (stage === 'normalize' || !result.ok) continue;
      // As the loader does for a row with no stored Location.
      const content = mergeLocation(result.row.location, undefined);
      const address = mergeAddress(result.row.address, undefined);
      const { encoded, hash } = encodeLocation(content);
      const addrHash = contentHash(address);
      if (sink) sink(undefined, [JSON.stringify(encoded), hash, addrHash]);
    }
  }
  return rows;
}

let gcMs = 0;
const gcObserver = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcMs += e.duration;
});
gcObserver.observe({ entryTypes: ['gc'] });

/** GC entries are delivered late (after a timer turn, not an immediate): wait before reading the total. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

interface Timing {
  /** Wall-clock time of the pass. */
  ms: number;
  /** CPU time of the process during the pass (all threads): steadier than wall time on a busy machine. */
  cpuMs: number;
  /** Share of the wall time spent in garbage collection pauses. */
  gcShare: number;
}

async function timed(buf: Buffer, stage: Stage): Promise<Timing> {
  await settle();
  gcMs = 0;
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  await pass(buf, stage);
  const used = process.cpuUsage(cpu);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  await settle();
  return { ms, cpuMs: (used.user + used.system) / 1000, gcShare: gcMs / ms };
}

async function digest(buf: Buffer): Promise<string> {
  const md5 = createHash('md5');
  await pass(buf, 'encode', (result, fields) => {
    md5.update(JSON.stringify(result ?? fields));
  });
  return md5.digest('hex');
}

async function main(): Promise<void> {
  const buf = sheet();
  console.log(`sheet: ${ROWS} rows, ${ORGS} Orgs, ${(buf.length / 2 ** 20).toFixed(1)} MiB; best of ${REPS}`);
  for (const stage of STAGES) await pass(buf, stage); // warm-up
  let previous = 0;
  for (const stage of STAGES) {
    let best: Timing = { ms: Number.POSITIVE_INFINITY, cpuMs: Number.POSITIVE_INFINITY, gcShare: 0 };
    for (let i = 0; i < REPS; i++) {
      const t = await timed(buf, stage);
      if (t.cpuMs < best.cpuMs) best = t;
    }
    const us = (best.cpuMs * 1000) / ROWS;
    console.log(
      `${stage.padEnd(10)} ${us.toFixed(2).padStart(6)} µs CPU/row (stage +${(us - previous).toFixed(2)})  ` +
        `wall ${((best.ms * 1000) / ROWS).toFixed(2)} µs/row = ${Math.round(ROWS / (best.ms / 1000)).toLocaleString('en')} rows/s  ` +
        `GC ${(best.gcShare * 100).toFixed(0)}% of wall`,
    );
    previous = us;
  }
  if (STAGES === ALL_STAGES) console.log(`output digest ${await digest(buf)}`);
  gcObserver.disconnect();
}

await main();
