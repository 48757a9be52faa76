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
