import type { LookupAddress } from 'node:dns';
import { isIP, type Socket } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import {
  addressRefusal,
  type HostResolver,
  ReceiverRefusedError,
  resolveAllowed,
  systemResolver,
} from './address-guard.js';

/** How long one request may take, connection included (GitHub's limit; the issue's). */
export const RECEIVER_TIMEOUT_MS = 10_000;
/** How much of a receiver's answer is read; the rest is dropped with the connection. */
export const MAX_ANSWER_BYTES = 64 * 1024;

export interface ReceiverAnswer {
  /** The answer's status; null when there was none (refused, unreachable, timed out). */
  status: number | null;
  /** Retry-After of the answer, in milliseconds from its arrival, when it had one that parses. */
  retryAfterMs: number | null;
  /** At most MAX_ANSWER_BYTES of the answer's body, as text. */
  body: string;
  durationMs: number;
  /** Why there was no answer, or what was wrong with it (a redirect, a refused address). */
  error: string | null;
}

export interface ReceiverClientOptions {
  allowPrivate: boolean;
  resolve?: HostResolver;
  timeoutMs?: number;
  /** Connections kept per receiver (each endpoint sends one request at a time). */
  connectionsPerOrigin?: number;
}

/** Sends webhook requests, never to an address the guard refuses, never following a redirect. */
export interface ReceiverClient {
  post(
    url: string,
    headers: Record<string, string>,
    body: string,
    signal?: AbortSignal,
  ): Promise<ReceiverAnswer>;
  close(): Promise<void>;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * The address a socket is connecting to is checked twice: the name is resolved by the guard (every
 * address it gives must be allowed, and those are the only ones the socket may use), and once
 * connected the socket's own remote address is checked again before a byte is written. So a name
 * that resolves to a public address when the endpoint is created and to a private one later (DNS
 * rebinding) is refused at the connection, and an IP literal, which Node connects to without a
 * lookup, is refused too.
 */
export function createReceiverClient(options: ReceiverClientOptions): ReceiverClient {
  const resolve = options.resolve ?? systemResolver;
  const { allowPrivate } = options;
  const timeoutMs = options.timeoutMs ?? RECEIVER_TIMEOUT_MS;

  const lookup = (hostname: string, opts: { all?: boolean }, callback: LookupCallback) => {
    resolveAllowed(hostname, { allowPrivate, resolve }).then(
      (found) => {
        if (opts.all) callback(null, found);
        else callback(null, found[0]!.address, found[0]!.family);
      },
      (error: Error) => callback(Object.assign(error, { code: 'EREFUSEDADDRESS' }), '', 0),
    );
  };
  const base = buildConnector({ timeout: timeoutMs, lookup } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (opts, callback) =>
    base(opts, (error, socket) => {
      if (error || !socket) return callback(error ?? new Error('no socket'), null);
      const remote = (socket as Socket).remoteAddress;
      const refusal =
        remote === undefined ? 'the connection has no remote address' : addressRefusal(remote, allowPrivate);
      if (refusal) {
        socket.destroy();
        return callback(new ReceiverRefusedError(`refused to send to ${refusal}`), null);
      }
      callback(null, socket);
    });
  const agent = new Agent({
    connect,
    connections: options.connectionsPerOrigin ?? 2,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 30_000,
  });

  return {
    async post(url, headers, body, signal) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const deadline = AbortSignal.timeout(timeoutMs);
      const abort = signal ? AbortSignal.any([signal, deadline]) : deadline;
      // An IP literal is connected to without a lookup: judged here, before any connection is made.
      const literal = literalHost(url);
      const refusal =
        !allowPrivate && !url.startsWith('https:')
          ? 'a plain http:// receiver'
          : literal === null
            ? null
            : addressRefusal(literal, allowPrivate);
      if (refusal) {
        const error = `refused to send to ${refusal}`;
        return { status: null, retryAfterMs: null, body: '', durationMs: elapsed(), error };
      }
      try {
        const answer = await request(url, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', 'user-agent': 'bizdir-webhooks/1', ...headers },
          body,
          signal: abort,
        });
        const text = await readCapped(answer.body, MAX_ANSWER_BYTES);
        const status = answer.statusCode;
        const redirect = status >= 300 && status < 400;
        return {
          status,
          retryAfterMs: parseRetryAfter(answer.headers['retry-after'], Date.now()),
          body: text,
          durationMs: elapsed(),
          error: redirect ? `answered ${status}: redirects are not followed` : null,
        };
      } catch (error) {
        const reason =
          deadline.aborted && !signal?.aborted ? `no answer within ${timeoutMs / 1000} s` : causeOf(error);
        return { status: null, retryAfterMs: null, body: '', durationMs: elapsed(), error: reason };
      }
    },
    close: () => agent.close(),
  };
}

/** The host of `url` when it is an IP address (brackets dropped), else null. */
function literalHost(url: string): string | null {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  return isIP(host) === 0 ? null : host;
}

/** The message of the deepest cause: undici wraps a refused connection in its own errors. */
function causeOf(error: unknown): string {
  let e = error as { message?: string; cause?: unknown } | undefined;
  while (e?.cause && typeof e.cause === 'object') e = e.cause as typeof e;
  return e?.message || String(error);
}

/** Reads at most `limit` bytes of a body, then drops the rest (and with it the connection). */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= limit) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

/** Retry-After as milliseconds from `now`: delay-seconds or an HTTP date (RFC 9110 10.2.3). */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return null;
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now);
}
