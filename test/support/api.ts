import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import { createAccount, type NewAccount } from '../../api/accounts/account.service.js';
import { buildApp } from '../../api/app.js';
import { loadConfig } from '../../shared/config.js';
import type { Db } from '../../shared/db.js';
import type { HostResolver } from '../../webhooks/address-guard.js';
import type { EventFeed } from '../../webhooks/event-feed.js';
import { createTestDb, type TestDb } from './db.js';
import { TEST_REDIS_URL } from './env.js';
import { FEED_CONFIG, importFeed } from './import.js';
import { meiliEnv, testIndexName } from './meili.js';
import { testQueuePrefix } from './redis.js';
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
  /** Webhook receivers' names; default: none resolves (tests never ask a real DNS). */
  resolveHost?: HostResolver;
  eventFeed?: EventFeed;
  /** Extra configuration (WEBHOOKS_ALLOW_PRIVATE, WEBHOOKS_MAX_ENDPOINTS, ...). */
  env?: Record<string, string>;
}

/** No name resolves: what a test app uses unless it says otherwise. */
export const noDns: HostResolver = async (host) => {
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};

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
    ...opts.env,
  });
  const app = await buildApp({
    config,
    ...(opts.clock ? { clock: opts.clock } : {}),
    resolveHost: opts.resolveHost ?? noDns,
    ...(opts.eventFeed ? { eventFeed: opts.eventFeed } : {}),
  });
  if (opts.ready !== false) await app.ready();
  return app;
}

export interface TestApi {
  /** The test's own database. */
  t: TestDb;
  app: FastifyInstance;
  /** Its Redis namespace (testQueuePrefix().prefix), for a second app on the same data. */
  prefix: string;
  /** The api_key of an account made after the app (only with `credits`). */
  key: string;
}

/**
 * The setup most API tests share: in beforeAll a database of their own, `seed` (records loaded
 * through the importers), the app on it and, with `credits`, an account; in afterAll the app closed,
 * the database dropped and the Redis namespace cleaned. The fields are set once beforeAll has run.
 */
export function useTestApi(
  options: {
    seed?: (t: TestDb, prefix: string) => Promise<void>;
    credits?: number;
    app?: Omit<TestApiOptions, 'databaseUrl' | 'prefix'>;
    /** For beforeAll, when `seed` is long. */
    timeoutMs?: number;
  } = {},
): TestApi {
  const redis = testQueuePrefix();
  const api = { prefix: redis.prefix } as TestApi;
  beforeAll(async () => {
    api.t = await createTestDb();
    await options.seed?.(api.t, redis.prefix);
    api.app = await startTestApi({ ...options.app, databaseUrl: api.t.url, prefix: redis.prefix });
    if (options.credits !== undefined) api.key = (await newAccount(api.t.db, options.credits)).api_key;
  }, options.timeoutMs);
  afterAll(async () => {
    await api.app?.close();
    await api.t?.drop();
    await redis.cleanup();
  });
  return api;
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

/** Data credits the Postgres ledger has charged a subscription (`sub_…` or its uid), all periods. */
export async function creditsUsed(db: Db, subscriptionId: string): Promise<number> {
  const rows = await db
    .selectFrom('usage_periods')
    .innerJoin('subscriptions', 'subscriptions.id', 'usage_periods.subscription_id')
    .select('usage_periods.used')
    .where('subscriptions.uid', '=', subscriptionId.replace(/^sub_/, ''))
    .execute();
  return rows.reduce((n, r) => n + r.used, 0);
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
