import { type DestinationStream, type Logger, pino } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from './config.js';

export type { Logger };

/** Query parameters whose values are secrets and never reach a log line. */
const SECRET_PARAMS = /([?&](?:api_key|token|password|key)=)[^&#]*/gi;

/** A URL as it may be logged: secret query values replaced (keys travel as `?api_key=`). */
export function redactUrl(url: string): string {
  return url.replace(SECRET_PARAMS, '$1[redacted]');
}

interface LoggableRequest {
  method?: string;
  url?: string;
  host?: string;
  hostname?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** Where log lines go: standard output (1) or standard error (2). */
export type LogFd = 1 | 2;

/**
 * The format a logger writes: LOG_FORMAT=json or pretty as asked; `auto` (the default) is pretty
 * when the lines go to a terminal and JSON otherwise (pipes, files, services, log collectors).
 */
export function resolveLogFormat(format: Config['logFormat'], isTty: boolean): 'json' | 'pretty' {
  if (format === 'auto') return isTty ? 'pretty' : 'json';
  return format;
}

/**
 * Structured logs; secrets are redacted wherever they could appear. Lines go to `fd` (bizdir start
 * writes its logs to stderr, keeping stdout for the banner a person reads) as JSON, or as human
 * lines (pino-pretty, colored on a terminal) per resolveLogFormat. `destination` (tests) takes JSON.
 */
export function createLogger(
  config: Pick<Config, 'logLevel'> & Partial<Pick<Config, 'logFormat'>>,
  bindings: Record<string, unknown> = {},
  destination?: DestinationStream,
  fd: LogFd = 1,
): Logger {
  const options = {
    level: config.logLevel,
    base: { pid: process.pid, ...bindings },
    redact: {
      paths: [
        'api_key',
        '*.api_key',
        'req.query.api_key',
        'headers.authorization',
        '*.headers.authorization',
      ],
      censor: '[redacted]',
    },
    serializers: {
      // Replaces Fastify's request serializer, which logs the raw URL, api_key and all.
      req: (req: LoggableRequest) => ({
        method: req.method,
        url: req.url === undefined ? undefined : redactUrl(req.url),
        host: req.host ?? req.hostname,
        remoteAddress: req.ip,
        remotePort: req.socket?.remotePort,
      }),
    },
  };
  if (destination) return pino(options, destination);
  const isTty = (fd === 1 ? process.stdout : process.stderr).isTTY === true;
  if (resolveLogFormat(config.logFormat ?? 'auto', isTty) === 'pretty') {
    // In this process (no worker thread) and synchronous, so no line is lost at exit.
    const stream = pretty({
      destination: fd,
      sync: true,
      colorize: isTty,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
      singleLine: false,
    });
    return pino(options, stream);
  }
  return fd === 1 ? pino(options) : pino(options, pino.destination(2));
}
