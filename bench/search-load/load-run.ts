import { readFileSync } from 'node:fs';
import { Pool } from 'undici';

/**
 * A closed-loop load: `connections` clients on kept-alive connections (an undici Pool of that
 * many), each asking its next request as soon as its last one is answered, until the list is
 * done. Every answer's latency is kept, with what the caller reads from it (a total, a header).
 */
export interface LoadRequest {
  path: string;
  method?: 'GET' | 'POST';
  body?: string;
  headers?: Record<string, string>;
}

export interface LoadAnswer<R> {
  ms: number;
  status: number;
  read: R;
}

export interface LoadResult<R> {
  answers: LoadAnswer<R>[];
  wallMs: number;
  /** CPU time (user + system) each watched process spent during the run, in ms. */
  cpuMs: Record<string, number>;
}

/** A process's CPU time so far (user + system, its threads included), in ms; 0 when it is gone. */
function processCpuMs(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are fields 14 and 15 of stat (11 and 12 after the name), in clock ticks (100/s).
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/**
 * CPU time of the watched processes between start and stop (ms): each name is one process or several
 * (the Postgres backends of the run's database, summed), and this process itself (the load
 * generator). The lists are read again at the stop: a process first seen then (a pool's connection
 * opened during the run) counts all its CPU time.
 */
export function cpuWatch(
  pids: Record<string, number | readonly number[]>,
): (end: Record<string, number | readonly number[]>) => Record<string, number> {
  const list = (p: number | readonly number[] | undefined) =>
    p === undefined ? [] : typeof p === 'number' ? [p] : p;
  const before = new Map<number, number>();
  for (const p of Object.values(pids).flatMap(list)) before.set(p, processCpuMs(p));
  const selfBefore = process.cpuUsage();
  return (end) => {
    const out: Record<string, number> = {};
    for (const name of Object.keys(pids)) {
      const all = new Set([...list(pids[name]), ...list(end[name])]);
      out[name] = [...all].reduce(
        (sum, pid) => sum + Math.max(0, processCpuMs(pid) - (before.get(pid) ?? 0)),
        0,
      );
    }
    const self = process.cpuUsage(selfBefore);
    out['load generator'] = (self.user + self.system) / 1000;
    return out;
  };
}

export async function runLoad<R>(
  origin: string,
  requests: readonly LoadRequest[],
  connections: number,
  read: (status: number, headers: Record<string, string | string[] | undefined>, body: string) => R,
  watch: () => Promise<Record<string, number | readonly number[]>>,
): Promise<LoadResult<R>> {
  // No timeout of its own: an overloaded server's slowest answers are what the run measures.
  const pool = new Pool(origin, {
    connections,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const answers: LoadAnswer<R>[] = new Array(requests.length);
  let next = 0;
  const cpu = cpuWatch(await watch());
  const started = performance.now();
  const client = async () => {
    for (;;) {
      const i = next++;
      if (i >= requests.length) return;
      const r = requests[i]!;
      const at = performance.now();
      const res = await pool.request({
        path: r.path,
        method: r.method ?? 'GET',
        ...(r.body !== undefined ? { body: r.body } : {}),
        ...(r.headers ? { headers: r.headers } : {}),
      });
      const body = await res.body.text();
      answers[i] = {
        ms: performance.now() - at,
        status: res.statusCode,
        read: read(res.statusCode, res.headers, body),
      };
    }
  };
  try {
    await Promise.all(Array.from({ length: connections }, client));
  } finally {
    await pool.close();
  }
  const wallMs = performance.now() - started;
  return { answers, wallMs, cpuMs: cpu(await watch()) };
}

export const pct = (sorted: readonly number[], p: number) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/** Throughput and latency percentiles of a run, and its CPU time per request by process. */
export function summary<R>(r: LoadResult<R>) {
  const lat = r.answers.map((a) => a.ms).sort((a, b) => a - b);
  const rps = r.answers.length / (r.wallMs / 1000);
  const cpuPerReq = Object.fromEntries(Object.entries(r.cpuMs).map(([k, v]) => [k, v / r.answers.length]));
  return {
    rps,
    p50: pct(lat, 50),
    p99: pct(lat, 99),
    max: lat[lat.length - 1] ?? Number.NaN,
    cpuPerReq,
    n: lat.length,
  };
}

export function describe(s: ReturnType<typeof summary>): string {
  const cpu = Object.entries(s.cpuPerReq)
    .map(([k, v]) => `${k} ${v.toFixed(2)}`)
    .join(', ');
  return `${s.n} requests, ${s.rps.toFixed(0)} req/s, p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms, max ${s.max.toFixed(1)} ms; CPU ms per request: ${cpu}`;
}
