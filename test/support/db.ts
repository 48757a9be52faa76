import pg from 'pg';
import { inject } from 'vitest';
import { createDb, type DbHandle } from '../../shared/db.js';
import { databaseUrlFor, TEST_PG_ADMIN_URL } from './env.js';

export interface TestDb extends DbHandle {
  url: string;
  name: string;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

let counter = 0;

/** A fresh, migrated database of this test file's own, cloned from the run's template. */
export async function createTestDb(): Promise<TestDb> {
  const name = `bizdir_t_${inject('testRunId')}_${process.pid}_${++counter}`;
  const admin = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(
      `create database ${pg.escapeIdentifier(name)} template ${pg.escapeIdentifier(inject('templateDb'))}`,
    );
  } finally {
    await admin.end();
  }
  const url = databaseUrlFor(name);
  const handle = createDb(url, { max: 5, applicationName: 'bizdir-test' });
  return {
    ...handle,
    url,
    name,
    async drop() {
      await handle.close();
      const client = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
      await client.connect();
      try {
        await client.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}
