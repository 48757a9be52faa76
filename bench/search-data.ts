import { sql } from 'kysely';
import pg from 'pg';
import type { Db } from '../shared/db.js';
import { slugify } from '../shared/domains.js';
import { companyName, prng } from './org-names.js';

/**
 * The search benchmark's register: N Orgs with generated names inserted straight into the real
 * schema (orgs + org_public_domains), in statements of BATCH rows like an import batch, so the
 * search triggers fire as they do in production.
 */
const BATCH = 20_000;

export async function createBenchDatabase(adminUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${pg.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function dropBenchDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
  } finally {
    await admin.end();
  }
}

export async function insertOrgs(db: Db, count: number, onBatch?: (done: number) => void): Promise<void> {
  const rand = prng(20_261_122);
  const start = Date.UTC(2015, 0, 1);
  const span = Date.UTC(2026, 0, 1) - start;
  for (let from = 0; from < count; from += BATCH) {
    const n = Math.min(BATCH, count - from);
    const names: string[] = [];
    const slugs: string[] = [];
    const updated: string[] = [];
    for (let i = 0; i < n; i++) {
      const name = companyName(rand);
      names.push(name);
      // The index in the label keeps it unique without the importer's clash counters.
      slugs.push(`${slugify(name).slice(0, 40)}-${from + i + 1}`);
      updated.push(new Date(start + Math.floor(rand() * span)).toISOString());
    }
    await db.transaction().execute(async (trx) => {
      await sql`
        with ins as (
          insert into orgs (domain_cc, public_slug, name, content_hash, updated)
          select 'gb', s, nm, md5(nm), u::timestamptz
          from unnest(${names}::text[], ${slugs}::text[], ${updated}::text[]) as t(nm, s, u)
          returning id, public_slug
        )
        insert into org_public_domains (slug, org_id) select public_slug, id from ins`.execute(trx);
    });
    onBatch?.(from + n);
  }
}

export async function createTrigramIndex(db: Db): Promise<void> {
  await sql`create extension if not exists pg_trgm`.execute(db);
  await sql`create index orgs_name_trgm on orgs using gin (name gin_trgm_ops)`.execute(db);
  await sql`analyze orgs`.execute(db);
}

/** Baseline (a): the same question answered by Postgres alone: page and exact total. */
export async function ilikeSearch(db: Db, q: string, limit: number, offset: number) {
  const pattern = `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const where = q === '' ? sql`true` : sql`name ilike ${pattern}`;
  const [page, total] = await Promise.all([
    sql<{
      id: number;
    }>`select id from orgs where ${where} order by lower(name), uid limit ${limit} offset ${offset}`.execute(
      db,
    ),
    sql<{ n: number }>`select count(*)::int as n from orgs where ${where}`.execute(db),
  ]);
  return { ids: page.rows.map((r) => r.id), total: total.rows[0]?.n ?? 0 };
}
