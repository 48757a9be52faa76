import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createAccount, type NewAccount } from '../../api/accounts/account.service.js';
import { buildApp } from '../../api/app.js';
import { loadConfig } from '../../shared/config.js';
import type { Db } from '../../shared/db.js';
import { TEST_REDIS_URL } from './env.js';
import { FEED_CONFIG, importFeed } from './import.js';
import { meiliEnv, testIndexName } from './meili.js';
import { registrarCsv, registrarFields } from './registrar-csv.js';

export const SUFFIX = FEED_CONFIG.domainSuffix;

export interface TestApiOptions {
  databaseUrl: string;
  /** Redis namespace of this test (testQueuePrefix().prefix). */
  prefix: string;
  redisUrl?: string;
  clock?: () => Date;
  /** Search index of this test (testIndexName()); default: a fresh unique name. */
  meiliIndex?: string;
  /** false: not made ready, so the test can still add routes of its own. */
  ready?: boolean;
}

/** A real app on the test's own database and Redis prefix, exercised through inject(). */
export async function startTestApi(opts: TestApiOptions): Promise<FastifyInstance> {
  const config = loadConfig({
    DATABASE_URL: opts.databaseUrl,
    REDIS_URL: opts.redisUrl ?? TEST_REDIS_URL,
    QUEUE_PREFIX: opts.prefix,
    DOMAIN_SUFFIX: SUFFIX,
    LOG_LEVEL: 'silent',
    // The run's private Meilisearch: the app never touches a local one (or a user's index).
    ...meiliEnv(opts.meiliIndex ?? testIndexName('api')),
  });
  const app = await buildApp({ config, ...(opts.clock ? { clock: opts.clock } : {}) });
  if (opts.ready !== false) await app.ready();
  return app;
}

export function newAccount(db: Db, credits = 1_000, anchorDate = '2026-01-15'): Promise<NewAccount> {
  return createAccount(db, { name: 'Test account', credits, anchorDate });
}

/** GET with a key, parsed. */
export async function get(app: FastifyInstance, path: string, apiKey?: string) {
  const sep = path.includes('?') ? '&' : '?';
  const url = apiKey === undefined ? path : `${path}${sep}api_key=${encodeURIComponent(apiKey)}`;
  const res = await app.inject({ method: 'GET', url });
  return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers };
}

export async function postJson(app: FastifyInstance, path: string, apiKey: string, body: unknown) {
  const res = await app.inject({
    method: 'POST',
    url: `${path}?api_key=${encodeURIComponent(apiKey)}`,
    headers: { 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers };
}

/** Field names of an object, sorted: compared with lists written out from the spec. */
export const keysOf = (value: unknown) => Object.keys(value as object).sort();

/** Loads one registered Org through the real registrar importer; returns its public domain. */
export async function importOneOrg(db: Db, name = 'ACME WIDGETS LTD', number = '01234567'): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'bizdir-api-'));
  try {
    const file = path.join(dir, 'registrar.csv');
    writeFileSync(file, registrarCsv([registrarFields(number, name)]));
    await importFeed(db, 'registrar', file, { country: 'GB' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.${SUFFIX}`;
}
