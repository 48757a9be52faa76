import { type Config, ConfigError, LOCAL_DEFAULTS, loadConfig } from '../shared/config.js';
import { configureQuietLog } from '../shared/outage.js';
import { readRunning } from './local/running.js';

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

/**
 * Configuration, validated once per process; a bad value stops the command with one message. The
 * log settings reach the shared quiet log (shared/outage.ts) from here too.
 */
export function cliConfig(): Config {
  if (!cached) {
    cached = loadConfig();
    configureQuietLog(cached);
  }
  return cached;
}

// Where a URL is not configured: the embedded service of a running `bizdir start` on the same
// DATA_DIR (it records them in <DATA_DIR>/services.json), else the fixed local default.
export function databaseUrlOf(config: Config): string {
  return config.databaseUrl ?? readRunning(config.dataDir)?.databaseUrl ?? LOCAL_DEFAULTS.databaseUrl;
}

export function redisUrlOf(config: Config): string {
  return config.redisUrl ?? readRunning(config.dataDir)?.redisUrl ?? LOCAL_DEFAULTS.redisUrl;
}

export function meiliUrlOf(config: Config): string {
  return config.meiliUrl ?? readRunning(config.dataDir)?.meiliUrl ?? LOCAL_DEFAULTS.meiliUrl;
}

/** The Meilisearch key: configured, else the one of a running `bizdir start`'s embedded Meilisearch. */
export function meiliMasterKeyOf(config: Config): string | undefined {
  if (config.meiliUrl) return config.meiliMasterKey;
  return config.meiliMasterKey ?? readRunning(config.dataDir)?.meiliMasterKey;
}

/**
 * The configuration with every service URL resolved as the commands resolve it (configured, else a
 * running `bizdir start`'s embedded service, else the local default), for code such as the API app
 * that reads the URLs straight from the config.
 */
export function resolvedConfig(config: Config = cliConfig()): Config {
  return Object.freeze({
    ...config,
    databaseUrl: databaseUrlOf(config),
    redisUrl: redisUrlOf(config),
    meiliUrl: meiliUrlOf(config),
    meiliMasterKey: meiliMasterKeyOf(config),
  });
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
