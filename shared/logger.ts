import { type DestinationStream, type Logger, pino } from 'pino';
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

/**
 * Structured JSON logs; secrets are redacted wherever they could appear. `destination` is for
 * callers that keep stdout for people (bizdir start writes logs to stderr) and for tests.
 */
export function createLogger(
  config: Pick<Config, 'logLevel'>,
  bindings: Record<string, unknown> = {},
  destination?: DestinationStream,
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
  return destination ? pino(options, destination) : pino(options);
}
