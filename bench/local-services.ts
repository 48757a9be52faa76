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
