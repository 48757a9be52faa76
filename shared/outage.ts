import type { Logger } from 'pino';
import type { Config } from './config.js';
import { createLogger } from './logger.js';

/**
 * Outages of a backing service (Postgres, Redis, Meilisearch), as the log tells them: one warning
 * when the connection is lost, with the service and the error, however many errors follow while it
 * is away; one info line when it is back, "recovered after N s". Clients report every error and
 * every success; the tracker decides what is worth a line.
 */
export interface OutageTracker {
  readonly service: string;
  /** An error that means the service is away: logged when it starts an outage, counted otherwise. */
  down(err: unknown): void;
  /** The service answered: ends the current outage, if any, with one line. */
  up(): void;
  /** True between a `down` and the next `up`. */
  readonly isDown: boolean;
}

/** What the tracker needs of a logger (a pino Logger, Fastify's included). */
export type OutageLog = Pick<Logger, 'warn' | 'info' | 'debug'>;

export interface OutageOptions {
  /**
   * `debug` for clients whose caller reports failures itself: both lines at debug. Default: the
   * "lost" line at warn, the "recovered" line at info.
   */
  lostLevel?: 'warn' | 'debug';
  now?: () => number;
}

/** An error as one line of text: its code (when it has one) and message. */
export function reasonOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  // AggregateError (a refused connection on both IPv4 and IPv6) has no message of its own.
  const inner = err instanceof AggregateError ? err.errors.map((e) => reasonOf(e)).join('; ') : '';
  const text = err.message || inner || err.name;
  return typeof code === 'string' && !text.includes(code) ? `${code}: ${text}` : text;
}

export function outageTracker(log: OutageLog, service: string, options: OutageOptions = {}): OutageTracker {
  const now = options.now ?? Date.now;
  const lostLevel = options.lostLevel ?? 'warn';
  let since: number | null = null;
  let errors = 0;
  return {
    service,
    get isDown() {
      return since !== null;
    },
    down(err) {
      if (since !== null) {
        errors++;
        return;
      }
      since = now();
      errors = 1;
      log[lostLevel]({ service, err: reasonOf(err) }, `${service} connection lost; retrying`);
    },
    up() {
      if (since === null) return;
      const downMs = now() - since;
      since = null;
      log[lostLevel === 'debug' ? 'debug' : 'info'](
        { service, down_ms: downMs, errors },
        `${service} connection recovered after ${(downMs / 1000).toFixed(1)} s`,
      );
    },
  };
}

type QuietLogConfig = Pick<Config, 'logLevel' | 'logFormat'>;

let quietConfig: QuietLogConfig = { logLevel: 'info', logFormat: 'auto' };
let quiet: Logger | undefined;

/**
 * The log settings of the quiet log (below), from the process's configuration: its entry point
 * (bin/cli-context.ts) sets them once, when it reads the configuration. Until then: `info`, `auto`.
 */
export function configureQuietLog(config: QuietLogConfig): void {
  quietConfig = { logLevel: config.logLevel, logFormat: config.logFormat };
  quiet = undefined;
}

/**
 * The log of clients nobody attached a tracker to (one-shot CLI commands): their failures reach the
 * command as rejected calls, which report them; the connection events are kept at debug.
 */
function quietLog(): Logger {
  quiet ??= createLogger(quietConfig, {}, undefined, 2);
  return quiet;
}

const trackers = new WeakMap<object, OutageTracker>();

/**
 * The tracker of a client (a Redis connection, a pg pool, or anything aliased to one): the one
 * `watchOutages` set, or a quiet one (debug lines, named `service`) made on first use.
 */
export function outageOf(client: object, service = 'backing service'): OutageTracker {
  let tracker = trackers.get(client);
  if (!tracker) {
    tracker = outageTracker(quietLog(), service, { lostLevel: 'debug' });
    trackers.set(client, tracker);
  }
  return tracker;
}

/** Logs the outages of `client` (and of anything aliased to it) on `log`, under `service`. */
export function watchOutages(client: object, log: OutageLog, service: string): OutageTracker {
  const tracker = outageTracker(log, service);
  trackers.set(client, tracker);
  return tracker;
}

/** Makes `alias` report to `client`'s tracker (a Kysely instance to its pool). */
export function aliasOutages(alias: object, client: object, service?: string): void {
  const target = {
    get service() {
      return outageOf(client, service).service;
    },
    get isDown() {
      return outageOf(client, service).isDown;
    },
    down: (err: unknown) => outageOf(client, service).down(err),
    up: () => outageOf(client, service).up(),
  };
  trackers.set(alias, target);
}

/** Logs the outages of a Redis client (ioredis emits `error` on each failed attempt, `ready` when back). */
export function reportRedisOutages(log: OutageLog, redis: object, service = 'Redis'): OutageTracker {
  return watchOutages(redis, log, service);
}

/** Logs the outages of a pg pool (createDb routes its errors and new connections to the tracker). */
export function reportPgOutages(log: OutageLog, pool: object, service = 'Postgres'): OutageTracker {
  return watchOutages(pool, log, service);
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EAI_AGAIN',
  // Postgres: connection exceptions and shutdowns.
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '57P01',
  '57P02',
  '57P03',
]);
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Connection is closed|Stream isn't writeable|Client has encountered a connection error|ECONNREFUSED|ECONNRESET/i;

/** True for errors that mean "the connection is lost or cannot be made", as opposed to a bad query. */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
  if (err.name === 'MaxRetriesPerRequestError') return true;
  if (err instanceof AggregateError && err.errors.some(isConnectionError)) return true;
  if (CONNECTION_MESSAGES.test(err.message)) return true;
  return err.cause !== undefined && err.cause !== err && isConnectionError(err.cause);
}

/** Of connection errors: true for those of a Redis client (ioredis), false for Postgres's. */
export function isRedisConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'MaxRetriesPerRequestError') return true;
  return /Connection is closed|Stream isn't writeable|enableOfflineQueue|Command timed out/i.test(
    err.message,
  );
}

/**
 * Reports an error to the outage tracker of the client it came from when it is a connection error
 * (an outage already logged once, or to be): true then, and the caller logs it at debug at most.
 */
export function reportConnectionError(err: unknown, clients: { postgres: object; redis: object }): boolean {
  if (isMarkedOutage(err)) return true;
  if (!isConnectionError(err)) return false;
  if (isRedisConnectionError(err)) outageOf(clients.redis, 'Redis').down(err);
  else outageOf(clients.postgres, 'Postgres').down(err);
  return true;
}

const OUTAGE = Symbol('bizdir.outage');

/** Marks an error as already reported by an outage tracker, so its job failure is logged at debug. */
export function markOutage<E>(err: E): E {
  if (err instanceof Error) (err as unknown as Record<symbol, boolean>)[OUTAGE] = true;
  return err;
}

export function isMarkedOutage(err: unknown): boolean {
  return err instanceof Error && (err as unknown as Record<symbol, boolean>)[OUTAGE] === true;
}

/**
 * A promise whose rejection its creator awaits later (work kept in flight): marks it handled now,
 * so a failure that comes while the creator is still busy elsewhere is not an unhandled rejection.
 * Nothing is lost: the same promise is awaited, and its error thrown, where the result is used.
 */
export function observeLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/**
 * A handler for an error that is right to ignore (`why` says why): logged at debug with its context,
 * so LOG_LEVEL=debug shows it, and nothing else is done.
 */
export function ignoreError(why: string, log: Pick<Logger, 'debug'> = quietLog()): (err: unknown) => void {
  return (err) => log.debug({ err: reasonOf(err) }, `ignored: ${why}`);
}
