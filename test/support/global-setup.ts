import { execFileSync } from 'node:child_process';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { databaseUrlFor, TEST_PG_ADMIN_URL, uniqueSuffix } from './env.js';
import { startRunMeili } from './meili.js';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDb: string;
    testRunId: string;
  }
}

/**
 * Migrates once into a template database through the real `bizdir migrate`; each test file then
 * clones it (test/support/db.ts), which takes milliseconds instead of a migration run per file.
 */
export default async function setup(project: TestProject) {
  const runId = uniqueSuffix();
  const templateDb = `bizdir_t_${runId}_tpl`;
  const admin = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${templateDb}`);
  await admin.end();
  execFileSync(process.execPath, ['--import', 'tsx', 'bin/bizdir.ts', 'migrate'], {
    env: { ...process.env, DATABASE_URL: databaseUrlFor(templateDb), LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  project.provide('templateDb', templateDb);
  project.provide('testRunId', runId);
  // One private Meilisearch for the run (search tests use their own index names); stopped below.
  const meili = await startRunMeili(runId);
  project.provide('meiliUrl', meili.server.url);
  project.provide('meiliKey', meili.server.masterKey);
  // Anything a test starts without naming a Meilisearch (a spawned `bizdir worker`, say) inherits
  // these, so no test process ever reaches a local Meilisearch or a user's index.
  process.env.MEILI_URL = meili.server.url;
  process.env.MEILI_MASTER_KEY = meili.server.masterKey;
  process.env.MEILI_INDEX = `t_default_${runId}`.replace(/[^A-Za-z0-9_-]/g, '_');

  return async () => {
    await meili.stop();
    const client = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
    await client.connect();
    const { rows } = await client.query<{ datname: string }>(
      'select datname from pg_database where datname like $1',
      [`bizdir_t_${runId}_%`],
    );
    for (const { datname } of rows) {
      await client.query(`drop database if exists ${pg.escapeIdentifier(datname)} with (force)`);
    }
    await client.end();
  };
}
