import { type Logger, pino } from 'pino';
import type { Config } from './config.js';

export type { Logger };

/** Structured JSON logs; secrets are redacted wherever they could appear. */
export function createLogger(
  config: Pick<Config, 'logLevel'>,
  bindings: Record<string, unknown> = {},
): Logger {
  return pino({
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
  });
}
