/**
 * Where the test services are. Tests only ever create and drop their own databases (bizdir_t_*),
 * use their own queue prefixes (bizdir-test-*) and their own Meilisearch instance and index names.
 */
export const TEST_PG_ADMIN_URL =
  process.env.TEST_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export function databaseUrlFor(name: string): string {
  const url = new URL(TEST_PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export const uniqueSuffix = () =>
  `${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;

/**
 * `bizdir start` with every URL unset (an empty variable counts as unset), so it embeds all three
 * services under `dataDir`.
 */
export const embeddedStartEnv = (dataDir: string): Record<string, string> => ({
  DATA_DIR: dataDir,
  HOST: '127.0.0.1',
  PORT: '0',
  DATABASE_URL: '',
  REDIS_URL: '',
  MEILI_URL: '',
  MEILI_MASTER_KEY: '',
  ADMIN_TOKEN: '',
  QUEUE_PREFIX: 'bizdir',
  LOG_LEVEL: 'warn',
});
