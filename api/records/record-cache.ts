import type { FastifyBaseLogger } from 'fastify';
import { PgListener, RECORDS_CHANNEL } from '../../shared/pg-listener.js';
import type { Rendered } from './rendered.view.js';

const MAX_ENTRIES = 50_000;

interface Entry {
  generation: number;
  day: string;
  record: Rendered | null;
}

interface Barrier {
  promise: Promise<void>;
  resolve(): void;
}

/**
 * The rendered JSON and ETag of the Orgs and Locations this process served, kept until the data
 * they are built from changes: migration 0012 makes every write to those tables NOTIFY
 * `bizdir_records` at commit, and each notification starts a new generation (entries of an older
 * one are never served). A hit costs no query, no row parsing, rendering or hashing.
 *
 * Reads stay exactly as fresh as reading Postgres: before a request looks in the cache it waits for
 * a barrier, a `select 1` on the listening connection sent after the request arrived. Postgres sends
 * a listener its pending notifications before it answers a command, so once the barrier is back,
 * every commit that finished before the request arrived has been seen. Concurrent requests share one
 * barrier (one round trip per batch, as the usage ledger's group commit). Without the listening
 * connection (Postgres away, reconnecting) nothing is cached and every read goes to Postgres.
 */
export class RecordCache {
  private readonly entries = new Map<string, Entry>();
  private generation = 0;
  private readonly listener: PgListener;
  private inFlight: Promise<void> | null = null;
  private next: Barrier | null = null;

  constructor(databaseUrl: string, log: FastifyBaseLogger) {
    const forget = () => {
      this.generation++;
      this.entries.clear();
    };
    this.listener = new PgListener({
      databaseUrl,
      channel: RECORDS_CHANNEL,
      applicationName: 'bizdir-api-cache',
      name: 'record cache',
      log,
      onNotify: forget,
      // Anything could have changed while no one listened.
      onListening: forget,
      onLost: forget,
      meanwhile: 'reading every record from Postgres until it is back',
      resumed: 'caching resumed',
    });
  }

  async start(): Promise<void> {
    await this.listener.start();
  }

  async close(): Promise<void> {
    await this.listener.close();
  }

  /**
   * The record under `key`, from the cache when it is current, else from `read` (cached for the
   * next request when no change arrived meanwhile). `day` is today's UTC date: a body that depends
   * on the date (open Location counts) is never served across midnight. `keep` false: what `read`
   * gave is not cached (a search answered from an index that is catching up, say).
   */
  async get(
    key: string,
    read: () => Promise<Rendered | undefined>,
    keep: () => boolean = () => true,
  ): Promise<Rendered | undefined> {
    if (!this.listener.connected) return read();
    await this.barrier();
    const day = new Date().toISOString().slice(0, 10);
    const generation = this.generation;
    const hit = this.entries.get(key);
    if (hit && hit.generation === generation && hit.day === day && this.listener.connected) {
      return hit.record ?? undefined;
    }
    const record = await read();
    // A change that arrived while `read` ran may not be in what it read: then it is not kept.
    if (this.listener.connected && this.generation === generation && keep()) {
      if (this.entries.size >= MAX_ENTRIES) {
        const oldest = this.entries.keys().next().value;
        if (oldest !== undefined) this.entries.delete(oldest);
      }
      this.entries.delete(key);
      this.entries.set(key, { generation, day, record: record ?? null });
    }
    return record;
  }

  /** Resolves once every commit that finished before the call has been notified (see above). */
  private barrier(): Promise<void> {
    // A barrier already on its way was sent before this request arrived: wait for the one after it.
    if (!this.next) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.next = { promise, resolve };
    }
    const mine = this.next.promise;
    if (!this.inFlight) this.sendBarrier();
    return mine;
  }

  private sendBarrier(): void {
    const barrier = this.next;
    if (!barrier) return;
    this.next = null;
    this.inFlight = this.listener.roundTrip().then(() => {
      this.inFlight = null;
      barrier.resolve();
      if (this.next) this.sendBarrier();
    });
  }
}
