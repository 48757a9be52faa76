import { readdirSync } from 'node:fs';
import path from 'node:path';
import { type Migration, Migrator, sql } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createDb, MIGRATIONS_DIR, RENAMED_MIGRATIONS } from '../shared/db.js';
import { runCli } from './support/cli.js';
import { databaseUrlFor, TEST_PG_ADMIN_URL } from './support/env.js';

/** The migrations in the folder, by name, in the order Kysely runs them. */
const current = readdirSync(MIGRATIONS_DIR)
  .filter((f) => /\.[cm]?[jt]s$/.test(f) && !f.endsWith('.d.ts'))
  .map((f) => f.replace(/\.[cm]?[jt]s$/, ''))
  .sort();
const oldNameOf = (name: string) =>
  Object.entries(RENAMED_MIGRATIONS).find(([, to]) => to === name)?.[0] ?? name;

let counter = 0;
const created: string[] = [];
function newDatabaseName(): string {
  const name = `bizdir_t_${inject('testRunId')}_${process.pid}_mig${++counter}`;
  created.push(name);
  return name;
}

afterAll(async () => {
  const admin = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
  await admin.connect();
  for (const name of created) {
    await admin.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
  }
  await admin.end();
});

async function recordedNames(url: string): Promise<string[]> {
  const { db, close } = createDb(url, { max: 1 });
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db);
    return rows.map((r) => r.name);
  } finally {
    await close();
  }
}

async function createDatabase(url: string): Promise<void> {
  const admin = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${pg.escapeIdentifier(new URL(url).pathname.slice(1))}`);
  await admin.end();
}

/** Kysely's Migrator over the migration files, each recorded under `nameOf` its current name. */
function migratorOf(db: ReturnType<typeof createDb>['db'], nameOf: (name: string) => string = (n) => n) {
  return new Migrator({
    db,
    provider: {
      async getMigrations() {
        const all: Record<string, Migration> = {};
        for (const name of current) {
          all[nameOf(name)] = (await import(path.join(MIGRATIONS_DIR, `${name}.ts`))) as Migration;
        }
        return all;
      },
    },
  });
}

/**
 * Sets a database up as an installation from before the renumbering did: the same migration files,
 * recorded under their old names, run by Kysely's Migrator up to and including `upTo` (an old name).
 */
async function migrateUnderOldNames(url: string, upTo: string): Promise<void> {
  await createDatabase(url);
  const { db, close } = createDb(url, { max: 1 });
  try {
    const result = await migratorOf(db, oldNameOf).migrateTo(upTo);
    expect(result.error).toBeUndefined();
  } finally {
    await close();
  }
}

/**
 * A new database migrated up to `upTo` (a current name), handed to `check` with its migrator; closed
 * afterwards (the database itself is dropped with the others in afterAll).
 */
async function onDatabaseAt(
  upTo: string,
  check: (db: ReturnType<typeof createDb>['db'], migrator: Migrator) => Promise<void>,
): Promise<void> {
  const url = databaseUrlFor(newDatabaseName());
  await createDatabase(url);
  const { db, close } = createDb(url, { max: 1 });
  try {
    const migrator = migratorOf(db);
    expect((await migrator.migrateTo(upTo)).error).toBeUndefined();
    await check(db, migrator);
  } finally {
    await close();
  }
}

describe('migrations', () => {
  it('0022 leaves in the labels tables only the labels held before (the current ones stay in public_slug)', async () => {
    await onDatabaseAt('0021_location_checks_planned_per_statement', async (db, migrator) => {
      // As 0021 left an installation: every current label in the labels table too, beside former ones.
      await sql`
        with o as (insert into orgs (domain_cc, public_slug, name, content_hash)
                   values ('gb', 'quay-light', 'QUAY LIGHT', 'x'), ('gb', 'acme', 'ACME', 'x') returning id, public_slug),
        l as (insert into locations (domain_cc, public_slug, org_id, code, content_hash)
              select 'gb', public_slug || '-whitby', id, 'W1', 'x' from o where public_slug = 'acme'
              returning id, public_slug)
        insert into org_public_domains (slug, org_id)
        select public_slug, id from o union all select 'harbour-light', id from o where public_slug = 'quay-light'`.execute(
        db,
      );
      await sql`insert into location_public_domains (slug, location_id)
        select public_slug, id from locations union all select 'acme-old-whitby', id from locations`.execute(
        db,
      );
      expect((await migrator.migrateToLatest()).error).toBeUndefined();
      const { rows } = await sql<{ slug: string }>`
        select slug from org_public_domains union all select slug from location_public_domains order by 1`.execute(
        db,
      );
      expect(rows.map((r) => r.slug)).toEqual(['acme-old-whitby', 'harbour-light']);
      const { rows: now } = await sql<{ slug: string }>`
        select public_slug as slug from orgs union all select public_slug from locations order by 1`.execute(
        db,
      );
      expect(now.map((r) => r.slug)).toEqual(['acme', 'acme-whitby', 'quay-light']);
      // Down again: every current label is back in its labels table.
      expect((await migrator.migrateTo('0021_location_checks_planned_per_statement')).error).toBeUndefined();
      const { rows: back } = await sql<{ n: number }>`
        select (select count(*) from org_public_domains)::int + (select count(*) from location_public_domains)::int as n`.execute(
        db,
      );
      expect(back[0]!.n).toBe(5);
    });
  });

  it('0023 drops the stored uid of Orgs and Addresses: the same uids are computed from the ids, and down stores them again', async () => {
    await onDatabaseAt('0022_labels_tables_hold_former_labels', async (db, migrator) => {
      await sql`
        with a as (insert into addresses (domain_cc, line1, content_hash) values ('gb', '1 QUAY', 'x') returning id)
        insert into orgs (domain_cc, public_slug, name, content_hash, registered_address_id)
        select 'gb', 'quay-light', 'QUAY LIGHT', 'x', id from a`.execute(db);
      const stored = async () =>
        (
          await sql<{ org: string; address: string }>`
            select o.uid as org, a.uid as address from orgs o join addresses a on a.id = o.registered_address_id`.execute(
            db,
          )
        ).rows[0]!;
      const before = await stored();
      expect(before.org).toMatch(/^[0-9a-z]{8}$/);
      expect((await migrator.migrateToLatest()).error).toBeUndefined();
      const { rows: columns } = await sql<{ table_name: string }>`
        select table_name from information_schema.columns
        where column_name = 'uid' and table_name in ('orgs', 'addresses', 'locations') order by 1`.execute(
        db,
      );
      expect(columns.map((c) => c.table_name)).toEqual(['locations']);
      const { rows: computed } = await sql<{ org: string; address: string }>`
        select bizdir_uid(o.id) as org, bizdir_uid(a.id) as address
        from orgs o join addresses a on a.id = o.registered_address_id`.execute(db);
      expect(computed[0]).toEqual(before);
      expect((await migrator.migrateTo('0022_labels_tables_hold_former_labels')).error).toBeUndefined();
      expect(await stored()).toEqual(before);
    });
  });

  it('0029 drops the scratch lists of runs that are settled or gone, and keeps those of runs that may still finish', async () => {
    await onDatabaseAt('0028_webhooks', async (db, migrator) => {
      const { rows: runs } = await sql<{ id: number; status: string }>`
        insert into import_runs (feed, source, status)
        values ('locations', 'a.csv', 'failed'), ('locations', 'b.csv', 'running'),
               ('locations', 'c.csv', 'queued'), ('locations', 'd.csv', 'succeeded')
        returning id, status`.execute(db);
      const gone = Math.max(...runs.map((r) => r.id)) + 1;
      for (const id of [...runs.map((r) => r.id), gone]) {
        await sql`insert into import_run_keys (run_id, key) values (${id}, '1:A'), (${id}, '1:B')`.execute(
          db,
        );
        await sql`insert into import_run_firsts (run_id, org_id, code, line) values (${id}, 1, 'A', 2)`.execute(
          db,
        );
      }
      expect((await migrator.migrateToLatest()).error).toBeUndefined();
      const { rows: kept } = await sql<{ status: string; keys: number; firsts: number }>`
        select r.status, (select count(*) from import_run_keys k where k.run_id = r.id)::int as keys,
               (select count(*) from import_run_firsts f where f.run_id = r.id)::int as firsts
        from import_runs r order by r.id`.execute(db);
      expect(kept).toEqual([
        { status: 'failed', keys: 0, firsts: 0 },
        { status: 'running', keys: 2, firsts: 1 },
        { status: 'queued', keys: 2, firsts: 1 },
        { status: 'succeeded', keys: 0, firsts: 0 },
      ]);
      const { rows: orphans } = await sql<{ n: number }>`
        select count(*)::int as n from import_run_keys where run_id = ${gone}`.execute(db);
      expect(orphans[0]!.n).toBe(0);
    });
  });

  it('have one number each', () => {
    const numbers = current.map((name) => name.slice(0, 4));
    expect(new Set(numbers).size).toBe(numbers.length);
    expect(numbers.slice(0, 6)).toEqual(['0001', '0002', '0003', '0004', '0005', '0006']);
  });

  it('a new database records every migration under its current name', async () => {
    const url = databaseUrlFor(newDatabaseName());
    const run = await runCli(['migrate'], { DATABASE_URL: url });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    for (const name of current) expect(run.stdout).toContain(`applied ${name}`);
    expect(await recordedNames(url)).toEqual(current);
  }, 60_000);

  it.each([
    ['every migration of the time', '0006_import_speed'],
    ['only those before 0005_schedules', '0005_registrar_import_keys'],
  ])(
    'a database migrated under the old names (%s) migrates cleanly and keeps its data',
    async (_, upTo) => {
      const url = databaseUrlFor(newDatabaseName());
      await migrateUnderOldNames(url, upTo);
      const before = await recordedNames(url);
      expect(before).toContain('0004_search');
      expect(before).toContain('0005_registrar_import_keys');
      const { db, close } = createDb(url, { max: 1 });
      await sql`insert into accounts (name) values ('kept')`.execute(db);
      await close();

      const run = await runCli(['migrate'], { DATABASE_URL: url });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      // Nothing that ran under an old name runs again; what was pending then runs now.
      const ranBefore = new Set(before);
      for (const name of current) {
        const applied = run.stdout.includes(`applied ${name}`);
        expect(applied, name).toBe(!ranBefore.has(oldNameOf(name)));
      }
      expect(await recordedNames(url)).toEqual(current);
      // A second run has nothing to do.
      const again = await runCli(['migrate'], { DATABASE_URL: url });
      expect(again.code).toBe(0);
      expect(again.stdout).toContain('database is up to date');

      const after = createDb(url, { max: 1 });
      const { rows } = await sql<{ name: string }>`select name from accounts`.execute(after.db);
      await after.close();
      expect(rows).toEqual([{ name: 'kept' }]);
      // Three CLI processes (each a Node start with tsx): a loaded 2-core machine needs more than 30 s.
    },
    120_000,
  );
});
