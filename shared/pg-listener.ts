import pg from 'pg';
import type { Logger } from './logger.js';
import { ignoreError } from './outage.js';

/**
 * The channel every committed write to the record tables (orgs, locations, addresses, their public
 * domains) NOTIFYs once per transaction (migration 0012).
 */
export const RECORDS_CHANNEL = 'bizdir_records';

/** What a listener logs with: pino's and Fastify's loggers both fit. */
type ListenerLog = Pick<Logger, 'info' | 'warn' | 'debug'>;

export interface PgListenerOptions {
  databaseUrl: string;
  channel: string;
  /** Shown in pg_stat_activity. */
  applicationName: string;
  /** Who listens, at the start of its log lines ("record cache"). */
  name: string;
  log: ListenerLog;
  /** A notification arrived on the channel. */
  onNotify(): void;
  /** Listening (again): anything may have changed while no one listened. */
  onListening?(): void;
  /** The connection is gone: notifications are missed until onListening. */
  onLost?(): void;
  /** The second half of the log line of an outage: what the owner does meanwhile. */
  meanwhile: string;
  /** The second half of the log line of the recovery. */
  resumed: string;
}

/**
 * One Postgres connection that LISTENs on a channel and comes back by itself after an outage
 * (retried every second; one log line when it is lost, one when it listens again).
 */
export class PgListener {
  private client: pg.Client | null = null;
  private connectedNow = false;
  private closed = false;
  private outageSince: number | null = null;
  private retry: NodeJS.Timeout | null = null;

  constructor(private readonly options: PgListenerOptions) {}

  get connected(): boolean {
    return this.connectedNow;
  }

  async start(): Promise<void> {
    await this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    this.connectedNow = false;
    await client
      ?.end()
      .catch(ignoreError(`closing the ${this.options.name} connection at shutdown`, this.options.log));
  }

  /**
   * A round trip on the listening connection. Postgres sends a listener its pending notifications
   * before it answers a command, so once this resolves every commit that finished before the call
   * has been notified. Resolves at once when not listening (then nothing is known anyway).
   */
  async roundTrip(): Promise<void> {
    const client = this.client;
    if (!client || !this.connectedNow) return;
    try {
      await client.query('select 1');
    } catch (err) {
      // The connection is going away; its 'error'/'end' handler takes it from here.
      this.lost(err);
    }
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const { options } = this;
    const client = new pg.Client({
      connectionString: options.databaseUrl,
      application_name: options.applicationName,
      connectionTimeoutMillis: 5_000,
    });
    // Events of a connection given up on (replaced after an outage) are ignored.
    const current = () => this.client === client;
    client.on('notification', (msg) => {
      if (current() && msg.channel === options.channel) options.onNotify();
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
      await client.query(`listen ${pg.escapeIdentifier(options.channel)}`);
    } catch (err) {
      if (current()) this.lost(err);
      return;
    }
    if (this.closed || !current()) {
      await client
        .end()
        .catch(ignoreError(`closing a ${options.name} connection no longer needed`, options.log));
      return;
    }
    this.connectedNow = true;
    options.onListening?.();
    if (this.outageSince !== null) {
      options.log.info(
        { after_ms: Date.now() - this.outageSince },
        `${options.name}: listening for changes again; ${options.resumed}`,
      );
      this.outageSince = null;
    }
  }

  private lost(err: unknown): void {
    if (this.closed) return;
    const { options } = this;
    const wasConnected = this.connectedNow;
    this.connectedNow = false;
    options.onLost?.();
    const client = this.client;
    this.client = null;
    // The connection is lost already: closing it can only fail the same way.
    client?.end().catch(ignoreError(`closing the lost ${options.name} connection`, options.log));
    if (this.outageSince === null) {
      this.outageSince = Date.now();
      options.log.warn(
        { err: err instanceof Error ? err.message : String(err), was_connected: wasConnected },
        `${options.name}: lost the Postgres connection that listens for changes; ${options.meanwhile}`,
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
