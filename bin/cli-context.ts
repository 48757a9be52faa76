import { type Config, ConfigError, LOCAL_DEFAULTS, loadConfig } from '../shared/config.js';

/** Thrown by a command for a failure the user can act on: printed as one line, exit code 1. */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

let cached: Config | undefined;

/** Configuration, validated once per process; a bad value stops the command with one message. */
export function cliConfig(): Config {
  cached ??= loadConfig();
  return cached;
}

export function databaseUrlOf(config: Config): string {
  return config.databaseUrl ?? LOCAL_DEFAULTS.databaseUrl;
}

export function redisUrlOf(config: Config): string {
  return config.redisUrl ?? LOCAL_DEFAULTS.redisUrl;
}

export function meiliUrlOf(config: Config): string {
  return config.meiliUrl ?? LOCAL_DEFAULTS.meiliUrl;
}

/** Turns any error escaping a command into one clear line and an exit code; never a stack trace. */
export function reportCliError(error: unknown): number {
  if (error instanceof ConfigError) {
    process.stderr.write(`bizdir: ${error.message}\n`);
    return 2;
  }
  if (error instanceof CliError) {
    process.stderr.write(`bizdir: ${error.message}\n`);
    return error.exitCode;
  }
  const code = (error as { code?: string })?.code;
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'ETIMEDOUT') {
    process.stderr.write(`bizdir: cannot reach a service (${(error as Error).message})\n`);
    return 1;
  }
  process.stderr.write(`bizdir: ${error instanceof Error ? error.message : String(error)}\n`);
  if (process.env.BIZDIR_DEBUG) console.error(error);
  return 1;
}
