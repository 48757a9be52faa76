/**
 * Preload for a benchmark: the wall time of each SQL statement (by its first 90 characters, COPY
 * included), summed over the process and printed at exit, most first. Wall time from send to answer:
 * it includes the wait for the event loop, so it says where a batch waits, not Postgres CPU.
 *
 *   node --import tsx --import ./bench/pg-statement-times.mjs bench/locations.bench.ts
 */
import pg from 'pg';

const totals = new Map();
const add = (key, ms) => {
  const t = totals.get(key) ?? { n: 0, ms: 0 };
  t.n++;
  t.ms += ms;
  totals.set(key, t);
};
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (...args) {
  const q = args[0];
  const text = typeof q === 'string' ? q : (q?.text ?? q?.constructor?.name ?? '?');
  const key = String(text).replace(/\s+/g, ' ').trim().slice(0, 90);
  const start = performance.now();
  const result = query.apply(this, args);
  const done = () => add(key, performance.now() - start);
  if (typeof result?.then === 'function') result.then(done, done);
  else if (typeof result?.on === 'function') result.on('finish', done);
  return result;
};
process.on('exit', () => {
  for (const [key, t] of [...totals].sort((a, b) => b[1].ms - a[1].ms).slice(0, 30)) {
    console.error(`${(t.ms / 1000).toFixed(2).padStart(7)} s ${String(t.n).padStart(6)}x  ${key}`);
  }
});
