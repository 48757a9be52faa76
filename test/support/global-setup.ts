import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
  // One temporary folder for the whole run, removed at its end: every test process inherits TMPDIR,
  // so the sheets, data folders and downloads tests write under os.tmpdir() never pile up in /tmp.
  const tmp = mkdtempSync(path.join(os.tmpdir(), `bizdir-test-${runId}-`));
  // Searchable by others, as /tmp is: an embedded Postgres started as root runs as another user,
  // which must pass through this folder to reach its data folder inside.
  chmodSync(tmp, 0o755);
  process.env.TMPDIR = tmp;
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
    rmSync(tmp, { recursive: true, force: true });
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
