/**
 * Preload for a benchmark: the wall time of each SQL statement (by its first 90 characters, COPY
 * included), summed over the process and printed at exit, most first. Wall time from send to answer:
 * it includes the wait for the event loop, so it says where a batch waits, not Postgres CPU.
 *
 * Beside it, the CPU time the statement's Postgres backend used meanwhile (Linux /proc, when the
 * server runs on this machine; 10 ms ticks, so only the sums over many statements are meaningful):
 * that says what the statement costs Postgres, whatever else the machine runs.
 * `PG_TIMES_SORT=cpu` sorts by it.
 *
 *   node --import tsx --import ./bench/pg-statement-times.mjs bench/locations.bench.ts
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';

const totals = new Map();
const add = (key, ms, ticks) => {
  const t = totals.get(key) ?? { n: 0, ms: 0, ticks: 0 };
  t.n++;
  t.ms += ms;
  t.ticks += ticks;
  totals.set(key, t);
};

/** User + system CPU ticks of a process so far (0 when /proc cannot tell). */
function cpuTicks(pid) {
  if (!pid) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (...args) {
  const q = args[0];
  const text = typeof q === 'string' ? q : (q?.text ?? q?.constructor?.name ?? '?');
  const key = String(text).replace(/\s+/g, ' ').trim().slice(0, 90);
  const pid = this.processID;
  const ticks = cpuTicks(pid);
  const start = performance.now();
  const result = query.apply(this, args);
  const done = () => add(key, performance.now() - start, cpuTicks(pid) - ticks);
  if (typeof result?.then === 'function') result.then(done, done);
  else if (typeof result?.on === 'function') result.on('finish', done);
  return result;
};
process.on('exit', () => {
  const by = process.env.PG_TIMES_SORT === 'cpu' ? 'ticks' : 'ms';
  let cpu = 0;
  for (const t of totals.values()) cpu += t.ticks;
  console.error(`statements: wall s, backend CPU s, count (backend CPU in all: ${(cpu / 100).toFixed(2)} s)`);
  for (const [key, t] of [...totals].sort((a, b) => b[1][by] - a[1][by]).slice(0, 30)) {
    console.error(
      `${(t.ms / 1000).toFixed(2).padStart(7)} s ${(t.ticks / 100).toFixed(2).padStart(6)} s ${String(t.n).padStart(6)}x  ${key}`,
    );
  }
});
