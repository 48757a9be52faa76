import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';
import { ignoreError } from '../../shared/outage.js';
import type { Rendered } from './rendered.view.js';

const CHANNEL = 'bizdir_records';
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
  private client: pg.Client | null = null;
  private connected = false;
  private closed = false;
  private outageSince: number | null = null;
  private retry: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private next: Barrier | null = null;

  constructor(
    private readonly databaseUrl: string,
    private readonly log: FastifyBaseLogger,
  ) {}

  async start(): Promise<void> {
    await this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    this.connected = false;
    await client?.end().catch(ignoreError('closing the record cache connection at shutdown', this.log));
  }

  /**
   * The record under `key`, from the cache when it is current, else from `read` (cached for the
   * next request when no change arrived meanwhile). `day` is today's UTC date: a body that depends
   * on the date (open Location counts) is never served across midnight.
   */
  async get(key: string, read: () => Promise<Rendered | undefined>): Promise<Rendered | undefined> {
    if (!this.connected) return read();
    await this.barrier();
    const day = new Date().toISOString().slice(0, 10);
    const generation = this.generation;
    const hit = this.entries.get(key);
    if (hit && hit.generation === generation && hit.day === day && this.connected) {
      return hit.record ?? undefined;
    }
    const record = await read();
    // A change that arrived while `read` ran may not be in what it read: then it is not kept.
    if (this.connected && this.generation === generation) {
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
    const client = this.client;
    const done = () => {
      this.inFlight = null;
      barrier.resolve();
      if (this.next) this.sendBarrier();
    };
    if (!client || !this.connected) {
      done();
      return;
    }
    this.inFlight = client.query('select 1').then(done, (err: unknown) => {
      // The connection is going away; its 'error'/'end' handler takes it from here.
      this.lost(err);
      done();
    });
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.databaseUrl,
      application_name: 'bizdir-api-cache',
      connectionTimeoutMillis: 5_000,
    });
    // Events of a connection given up on (replaced after an outage) are ignored.
    const current = () => this.client === client;
    client.on('notification', () => {
      if (!current()) return;
      this.generation++;
      this.entries.clear();
    });
    client.on('error', (err) => {
      if (current()) this.lost(err);
    });
    client.on('end', () => {
      if (current()) this.lost(new Error('connection ended'));
    });
    this.client = client;
    try {
      await client.connect();
      await client.query(`listen ${CHANNEL}`);
    } catch (err) {
      if (current()) this.lost(err);
      return;
    }
    if (this.closed || !current()) {
      await client.end().catch(ignoreError('closing a record cache connection no longer needed', this.log));
      return;
    }
    // Anything could have changed while no one listened.
    this.generation++;
    this.entries.clear();
    this.connected = true;
    if (this.outageSince !== null) {
      this.log.info(
        { after_ms: Date.now() - this.outageSince },
        'record cache: listening for changes again; caching resumed',
      );
      this.outageSince = null;
    }
  }

  private lost(err: unknown): void {
    if (this.closed) return;
    const wasConnected = this.connected;
    this.connected = false;
    this.generation++;
    this.entries.clear();
    const client = this.client;
    this.client = null;
    // The connection is lost already: closing it can only fail the same way.
    client?.end().catch(ignoreError('closing the lost record cache connection', this.log));
    if (this.outageSince === null) {
      this.outageSince = Date.now();
      // Once per outage: every read goes to Postgres meanwhile, which answers 503 while it is away.
      this.log.warn(
        { err: err instanceof Error ? err.message : String(err), was_connected: wasConnected },
        'record cache: lost the Postgres connection that listens for changes; reading every record from Postgres until it is back',
      );
    }
    if (!this.retry) {
      this.retry = setTimeout(() => {
        this.retry = null;
        void this.connect();
      }, 1_000);
      this.retry.unref();
    }
  }
}
