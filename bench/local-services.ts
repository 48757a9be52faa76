import pg from 'pg';
import { LOCAL_DEFAULTS } from '../shared/config.js';

/**
 * The services a benchmark uses when its environment names none: the local defaults of
 * shared/config.ts (LOCAL_DEFAULTS), never numbers of its own. A benchmark creates and drops its own
 * databases through that server's `postgres` database.
 */
export const LOCAL_PG_ADMIN_URL = (() => {
  const url = new URL(LOCAL_DEFAULTS.databaseUrl);
  url.pathname = '/postgres';
  return url.toString();
})();

export const LOCAL_REDIS_URL = LOCAL_DEFAULTS.redisUrl;

/** Runs one statement on its own connection (CREATE/DROP DATABASE cannot share a transaction). */
export async function runStatement(url: string, text: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
}
