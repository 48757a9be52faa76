/**
 * Where one search request's time went: its search index calls (how many, how long at least one was
 * in flight, the index's own processing time summed, the slowest round trip) and its database
 * reads. The API sends it as a `Server-Timing` header (W3C Server Timing), so a client, an operator
 * or a benchmark can tell a slow answer's search time from the API's own (event loop, garbage
 * collection) without tracing. Calls may overlap: `search` is the time with at least one in flight,
 * not the sum of their round trips.
 *
 * Every answer carries the neutral form (`db`, `search`, `total`): it names no component, so it
 * tells a client nothing of the stack. The detailed form (the index's own time, the slowest call,
 * the counts) is for operators: the API sends it only to a request carrying the admin token.
 */
const ms = (n: number) => n.toFixed(1);

export class SearchTiming {
  engineCalls = 0;
  /** Time with at least one Meilisearch call in flight. */
  engineMs = 0;
  /** Meilisearch's own `processingTimeMs`, summed over the calls. */
  engineSelfMs = 0;
  engineSlowestMs = 0;
  dbCalls = 0;
  dbMs = 0;
  private inFlight = 0;
  private since = 0;

  /** Times one Meilisearch call; `processingTimeMs` is read from its answer when it has one. */
  async engine<T>(call: () => Promise<T>): Promise<T> {
    const started = performance.now();
    if (this.inFlight++ === 0) this.since = started;
    try {
      const res = await call();
      const own = (res as { processingTimeMs?: unknown } | null)?.processingTimeMs;
      if (typeof own === 'number') this.engineSelfMs += own;
      return res;
    } finally {
      const ended = performance.now();
      this.engineCalls++;
      this.engineSlowestMs = Math.max(this.engineSlowestMs, ended - started);
      if (--this.inFlight === 0) this.engineMs += ended - this.since;
    }
  }

  /** Times one Postgres read (summed: the reads of one request may overlap too). */
  async db<T>(read: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await read();
    } finally {
      this.dbCalls++;
      this.dbMs += performance.now() - started;
    }
  }

  /** The `Server-Timing` value every answer carries, with `total` the request's time in the API so far. */
  header(totalMs: number): string {
    return [`db;dur=${ms(this.dbMs)}`, `search;dur=${ms(this.engineMs)}`, `total;dur=${ms(totalMs)}`].join(
      ', ',
    );
  }

  /** The detailed value, for operators (the admin token): the neutral one plus the index's own account. */
  detailedHeader(totalMs: number): string {
    return [
      `db;dur=${ms(this.dbMs)};desc="${this.dbCalls} reads"`,
      `search;dur=${ms(this.engineMs)};desc="${this.engineCalls} calls"`,
      `search-self;dur=${ms(this.engineSelfMs)};desc="the index's own processing, summed"`,
      `search-slowest;dur=${ms(this.engineSlowestMs)}`,
      `total;dur=${ms(totalMs)}`,
    ].join(', ');
  }
}

/** `call` timed as a Meilisearch call when the request is timed, run as it is otherwise. */
export const engineTimed = <T>(timing: SearchTiming | undefined, call: () => Promise<T>): Promise<T> =>
  timing ? timing.engine(call) : call();

/** `read` timed as a Postgres read when the request is timed, run as it is otherwise. */
export const dbTimed = <T>(timing: SearchTiming | undefined, read: () => Promise<T>): Promise<T> =>
  timing ? timing.db(read) : read();

/** A `Server-Timing` value read back into durations by metric name (benchmarks, tests). */
export function parseServerTiming(value: string | null | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const metric of (value ?? '').split(',')) {
    const [name, ...params] = metric.trim().split(';');
    const dur = params.find((p) => p.trim().startsWith('dur='));
    if (name && dur) out[name.trim()] = Number(dur.trim().slice(4));
  }
  return out;
}
