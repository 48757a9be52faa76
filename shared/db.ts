import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  FileMigrationProvider,
  Kysely,
  type MigrationResultSet,
  Migrator,
  PostgresDialect,
  sql,
} from 'kysely';
import pg from 'pg';
import { aliasOutages, isConnectionError, outageOf } from './outage.js';
import { answerClientMarker } from './pg-copy.js';
import type { Database } from './tables.js';

// Types that match runtime (see database.ts): ids and counters are int8 but stay far below 2^53;
// dates stay 'YYYY-MM-DD' strings so no time zone can shift them.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.DATE, (v) => v);
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

export type Db = Kysely<Database>;

export interface DbHandle {
  db: Db;
  pool: pg.Pool;
  close(): Promise<void>;
}

export interface DbOptions {
  max?: number;
  applicationName?: string;
  /** Fail fast instead of hanging when Postgres is away. */
  connectionTimeoutMillis?: number;
  statementTimeoutMillis?: number;
}

export function createDb(connectionString: string, options: DbOptions = {}): DbHandle {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'bizdir',
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5_000,
    ...(options.statementTimeoutMillis ? { statement_timeout: options.statementTimeoutMillis } : {}),
  });
  // A lost connection must not crash the process; the next query reconnects. The pool listens on
  // idle clients only: a client that is checked out when its connection drops emits 'error' on
  // itself, which would be an uncaught exception, so every client gets a listener of its own (the
  // query it was running is rejected anyway and answered as a 503 by the API). Both go to the pool's
  // outage tracker (reportPgOutages: one line per outage, and one when a new connection is made).
  pool.on('error', (err) => outageOf(pool, 'Postgres').down(err));
  pool.on('connect', (client) => {
    client.on('error', (err) => outageOf(pool, 'Postgres').down(err));
    outageOf(pool, 'Postgres').up();
    // Lets bulk writers reach a transaction's client for COPY (see pg-copy.ts).
    answerClientMarker(client);
  });
  // A connection that cannot be made (Postgres away, no idle client to lose) is an outage too, in
  // both of pg's forms: the promise (Kysely) and the callback (pool.query).
  const refused = (err: unknown) => {
    if (isConnectionError(err)) outageOf(pool, 'Postgres').down(err);
  };
  const connect = pool.connect as (this: pg.Pool, ...args: unknown[]) => Promise<pg.PoolClient> | undefined;
  pool.connect = function (this: pg.Pool, ...args: unknown[]) {
    const [callback] = args;
    if (typeof callback === 'function') {
      return connect.call(this, (err: unknown, ...rest: unknown[]) => {
        if (err) refused(err);
        return callback(err, ...rest);
      });
    }
    return connect.call(this)?.catch((err: unknown) => {
      refused(err);
      throw err;
    });
  } as typeof pool.connect;
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  // Code that holds only `db` (the worker's jobs) reports a lost connection to the pool's tracker.
  aliasOutages(db, pool, 'Postgres');
  return {
    db,
    pool,
    // Kysely's destroy ends the pool it was given.
    close: () => db.destroy(),
  };
}

/** Readiness probe: resolves when Postgres answers a trivial query. */
export async function pingDatabase(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}

export const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

export function createMigrator<T>(db: Kysely<T>): Migrator {
  return new Migrator({
    // Migrations see an untyped database: they are frozen and must not depend on today's types.
    db: db as unknown as Kysely<unknown>,
    provider: new FileMigrationProvider({ fs, path, migrationFolder: MIGRATIONS_DIR }),
  });
}

export class MigrationError extends Error {
  override name = 'MigrationError';
}

/**
 * Migrations that were renumbered after databases had run them (there were two 0005 and no 0003):
 * old name -> new name. The files' contents did not change and the order is the same, so a database
 * that ran them under the old names has run exactly these. Kysely's Migrator refuses a database
 * whose recorded migrations are missing from the folder, so the recorded names are renamed first.
 *
 * It stays: a database migrated before the rename (commit 9ed1d2d), a `bizdir start` data folder or
 * a deployment, would otherwise be refused, and nothing can tell that none is left. It costs one
 * statement per migration run. It can go once a release requires databases to have been migrated
 * by a version that has it (test/migrations.test.ts holds it until then).
 */
export const RENAMED_MIGRATIONS: Readonly<Record<string, string>> = Object.freeze({
  '0004_search': '0003_search',
  '0005_registrar_import_keys': '0004_registrar_import_keys',
});

/** Renames recorded migrations to their current names (one statement; idempotent; no-op on a new database). */
async function renameRecordedMigrations<T>(db: Kysely<T>): Promise<void> {
  const { rows } = await sql<{ found: boolean }>`
    select to_regclass('kysely_migration') is not null as found`.execute(db);
  if (!rows[0]?.found) return;
  const pairs = Object.entries(RENAMED_MIGRATIONS);
  const cases = sql.join(
    pairs.map(([from, to]) => sql`when ${from} then ${to}`),
    sql` `,
  );
  await sql`
    update kysely_migration set name = case name ${cases} end
    where name in (${sql.join(pairs.map(([from]) => from))})`.execute(db);
}

/** Runs every pending migration; throws (after reporting each step) when one fails. */
export async function migrateToLatest<T>(
  db: Kysely<T>,
  log: (line: string) => void = () => {},
): Promise<MigrationResultSet> {
  await renameRecordedMigrations(db);
  const result = await createMigrator(db).migrateToLatest();
  for (const r of result.results ?? []) {
    log(
      `${r.status === 'Success' ? 'applied' : r.status === 'Error' ? 'FAILED ' : 'skipped'} ${r.migrationName}`,
    );
  }
  if (result.error) {
    const cause = result.error instanceof Error ? result.error.message : String(result.error);
    throw new MigrationError(`Migration failed: ${cause}`);
  }
  return result;
}

/** Creates the database named in the URL when it does not exist yet (first run on a fresh server). */
export async function ensureDatabase(connectionString: string): Promise<boolean> {
  const url = new URL(connectionString);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) return false;
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount) return false;
    await client.query(`create database ${pg.escapeIdentifier(name)}`);
    return true;
  } catch (error) {
    // Another process created it between our check and our create.
    if ((error as { code?: string }).code === '42P04') return false;
    throw error;
  } finally {
    await client.end();
  }
}
