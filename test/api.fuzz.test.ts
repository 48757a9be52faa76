import { STATUS_CODES } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Meilisearch } from 'meilisearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeKey } from '../api/accounts/account.service.js';
import { uidOf } from '../shared/org-domains.read-model.js';
import { creditsUsed, newAccount, SUFFIX, useTestApi } from './support/api.js';
import { type FuzzRequest, fuzzRequests, type Operation, operationsOf } from './support/fuzz-requests.js';
import { importFeed } from './support/import.js';
import { testIndexName, testMeiliClient } from './support/meili.js';
import { parseResponse, type RawResponse, rawExchange } from './support/raw-http.js';
import { buildTestIndex } from './support/search-index.js';

/**
 * Seeded fuzz test: thousands of hostile requests (test/support/fuzz-requests.ts) against every route
 * the app documents, over real sockets, asserting for each answer: no 5xx; every error is exactly
 * `{code, message}` with `<Status text>: <reason>`; nothing internal (stack, SQL, module or file
 * names, framework error codes) and no api_key in any answer. At the end the credits charged equal
 * the 200s served on metered routes. FUZZ_SEED and FUZZ_RUNS replay or widen a run; FUZZ_STATS=1 prints how
 * the answers spread.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_114);
const RUNS = Number(process.env.FUZZ_RUNS ?? 2_000);
const CONCURRENCY = 8;
/** Routes whose 200 reports usage but costs nothing (docs/decisions.md: the usage endpoint is free). */
const FREE_ROUTES = new Set(['GET /v1/usage']);
/** Routes whose 200 is free when its page is empty (docs/events.md: an empty page of the feed). */
const FREE_WHEN_EMPTY = new Set(['GET /v1/events']);
const emptyPage = (body: string) => (JSON.parse(body) as { events?: unknown[] }).events?.length === 0;

/** Text that only an internal error would put in an answer (unless the request itself held it). */
const INTERNALS: RegExp[] = [
  /\bat .+:\d+:\d+/, // stack frame
  /node_modules|\/work\/|\.ts:\d+|\.js:\d+/,
  /FST_[A-Z_]+|ERR_[A-Z_]{4,}|HPE_[A-Z_]+/,
  /\bselect\b[\s\S]*\bfrom\b|\binsert into\b|\brelation "|syntax error at or near|invalid byte sequence/i,
  /kysely|postgres|\bpg\b|meilisearch|ioredis|bullmq|\bajv\b|typebox|fastify|papaparse/i,
  /ECONNREFUSED|ETIMEDOUT|"statusCode"|"stack"|"error":/,
];
let meili: Meilisearch;
let port: number;
let validKey: string;
let revokedKey: string;
let subscriptionUid: string;
let ops: Operation[];
let domains: string[];
const endpointIds: string[] = [];
const indexUid = testIndexName('fuzz');

const api = useTestApi({
  seed: async (t) => {
    await importFeed(t.db, 'registrar', 'samples/registrar-sample.csv');
    await importFeed(t.db, 'locations', 'samples/locations-sample.csv');
    meili = testMeiliClient();
    await buildTestIndex(t.db, meili, indexUid);
  },
  app: {
    meiliIndex: indexUid,
    // Webhook receivers: one public name (nothing is ever sent in this test: no worker runs).
    resolveHost: async (host) => {
      if (host !== 'hooks.example.com') throw new Error(`getaddrinfo ENOTFOUND ${host}`);
      return [{ address: '93.184.216.34', family: 4 }];
    },
    env: { WEBHOOKS_MAX_ENDPOINTS: '1000' },
  },
  timeoutMs: 120_000,
});

afterAll(async () => {
  await meili?.deleteIndexIfExists(indexUid);
});

beforeAll(async () => {
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  port = (api.app.server.address() as AddressInfo).port;

  const account = await newAccount(api.t.db, 1_000_000);
  validKey = account.api_key;
  subscriptionUid = account.subscription_id.replace(/^sub_/, '');
  const revoked = await newAccount(api.t.db, 1_000_000);
  revokedKey = revoked.api_key;
  await revokeKey(api.t.db, api.app.redis, api.prefix, revoked.key_prefix);

  // The routes come from the app's own OpenAPI document: a new route is fuzzed without a change here.
  ops = operationsOf((await api.app.inject({ method: 'GET', url: '/openapi.json' })).json());
  domains = await knownDomains();
  // Webhook endpoints of the valid key's account, for the routes that name one (some get deleted).
  for (let i = 0; i < 40; i++) {
    const res = await api.app.inject({
      method: 'POST',
      url: `/v1/webhook_endpoints?api_key=${validKey}`,
      payload: { url: `https://hooks.example.com/${i}`, types: ['*'] },
    });
    endpointIds.push((res.json() as { id: string }).id);
  }
}, 120_000);

async function knownDomains(): Promise<string[]> {
  const orgs = await api.t.db
    .selectFrom('orgs')
    .select([uidOf('orgs').as('uid'), 'domain_cc', 'public_slug'])
    .execute();
  const locations = await api.t.db
    .selectFrom('locations')
    .select(['uid', 'domain_cc', 'public_slug'])
    .execute();
  return [
    ...orgs.flatMap((o) => [`${o.uid}.${o.domain_cc}.${SUFFIX}`, `${o.public_slug}.${SUFFIX}`]),
    ...locations.flatMap((l) => [`${l.uid}.loc.${l.domain_cc}.${SUFFIX}`, `${l.public_slug}.loc.${SUFFIX}`]),
  ];
}

const chargedCredits = () => creditsUsed(api.t.db, subscriptionUid);

interface Outcome {
  request: FuzzRequest;
  response: RawResponse | null;
  problems: string[];
}

/** Sends one request and lists what is wrong with its answer. */
async function probe(request: FuzzRequest): Promise<Outcome> {
  let text = await rawExchange(port, request.bytes, 15_000);
  // `Expect: 100-continue` gets an interim answer first; the real one follows.
  text = text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
  if (text === '') return { request, response: null, problems: ['no answer'] };
  const response = parseResponse(text);
  const problems: string[] = [];
  const { status } = response;
  if (!(status >= 200 && status < 500)) problems.push(`status ${status}`);
  const requestText = request.bytes.toString('latin1');
  // The keys of the run, and anything shaped like a key (the unknown ones the generator made up).
  if ([validKey, revokedKey].some((k) => response.raw.includes(k)) || /bzk_[\w-]{8}/.test(response.raw)) {
    problems.push('an api_key is echoed');
  }
  if (!response.headers['x-request-id']) problems.push('no X-Request-Id');
  if (status >= 400 && request.method.toUpperCase() !== 'HEAD') {
    let body: unknown;
    try {
      body = JSON.parse(response.body);
    } catch {
      problems.push(`error body is not JSON: ${response.body.slice(0, 100)}`);
    }
    const { code, message } = (body ?? {}) as { code?: unknown; message?: unknown };
    if (
      Object.keys(body ?? {})
        .sort()
        .join() !== 'code,message'
    )
      problems.push('error body is not {code, message}');
    if (code !== status) problems.push(`code ${String(code)} is not the status ${status}`);
    const prefix = `${STATUS_CODES[status]}: `;
    if (typeof message !== 'string' || !message.startsWith(prefix) || message.length === prefix.length) {
      problems.push(`message ${JSON.stringify(message)} is not "${prefix}<reason>"`);
    }
    if (!/^application\/json/.test(response.headers['content-type'] ?? ''))
      problems.push('error is not JSON');
    for (const pattern of INTERNALS) {
      const leak = pattern.exec(response.body);
      if (leak && !pattern.test(requestText)) problems.push(`internal text in the answer: ${leak[0]}`);
    }
  }
  return { request, response, problems };
}

/** FUZZ_STATS=1: how the answers spread over statuses, routes and messages (to tune the generator). */
function printStats(outcomes: readonly Outcome[]): void {
  const count = (key: (o: Outcome) => string) => {
    const m = new Map<string, number>();
    for (const o of outcomes) m.set(key(o), (m.get(key(o)) ?? 0) + 1);
    return Object.fromEntries([...m].sort());
  };
  const route = (o: Outcome) => (o.request.op ? `${o.request.op.method} ${o.request.op.path}` : 'odd path');
  console.log(count((o) => `${route(o)} ${o.response?.status}`));
  console.log(
    count((o) => `${o.response?.status} ${o.response?.status === 200 ? '' : o.response?.body.slice(0, 90)}`),
  );
}

/** The `request` object of a metered 200, if the body is one. */
function meteredBody(body: string): { credit_used_this_request: unknown } | null {
  try {
    const request = (JSON.parse(body) as { request?: unknown }).request;
    return request !== null && typeof request === 'object' && 'credit_used_this_request' in request
      ? (request as { credit_used_this_request: unknown })
      : null;
  } catch {
    return null;
  }
}

/** Runs the requests `CONCURRENCY` at a time, in order of generation. */
async function probeAll(requests: readonly FuzzRequest[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = new Array(requests.length);
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const i = next++;
      outcomes[i] = await probe(requests[i]!);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return outcomes;
}

describe(`API fuzz (seed ${SEED}, ${RUNS} requests)`, () => {
  it('finds the documented routes and has data to succeed with', () => {
    const names = ops.map((o) => `${o.method} ${o.path}`);
    expect(names).toEqual(
      expect.arrayContaining([
        'GET /v1/org/{domain}',
        'GET /v1/org/{domain}/locations',
        'GET /v1/location/{domain}',
        'GET /v1/org/search',
        'POST /v1/contact',
      ]),
    );
    expect(domains.length).toBeGreaterThan(20);
  });

  it('never answers 5xx, a foreign error shape, internals or a key; credits = 200s served', async () => {
    const requests = fuzzRequests(
      { ops, domains, pathValues: { id: endpointIds }, validKey, revokedKey },
      SEED,
      RUNS,
    );
    const outcomes = await probeAll(requests);

    if (process.env.FUZZ_STATS) printStats(outcomes);
    const failures = outcomes.filter((o) => o.problems.length > 0);
    const report = failures
      .slice(0, 15)
      .map(
        (f) => `${f.problems.join('; ')}\n    ${f.request.summary}\n    -> ${f.response?.raw.slice(0, 300)}`,
      );
    expect(report, `${failures.length} of ${RUNS} answers are wrong (seed ${SEED})`).toEqual([]);

    // A 200 that reports usage carries `request`; only the valid key may get one. Each costs one
    // credit, except on the routes that are free by design; the ledger holds exactly what they cost.
    const metered = outcomes.filter((o) => o.response?.status === 200 && meteredBody(o.response.body));
    expect(metered.filter((o) => o.request.keyKind !== 'valid').map((o) => o.request.summary)).toEqual([]);
    let served = 0;
    for (const o of metered) {
      const route = `${o.request.op?.method} ${o.request.op?.path}`;
      const cost =
        FREE_ROUTES.has(route) || (FREE_WHEN_EMPTY.has(route) && emptyPage(o.response!.body)) ? 0 : 1;
      expect(meteredBody(o.response!.body), o.request.summary).toMatchObject({
        credit_used_this_request: cost,
      });
      served += cost;
    }
    expect(served).toBeGreaterThan(100);
    // The endpoints made for the run cost one credit each too.
    expect(await chargedCredits()).toBe(served + endpointIds.length);

    // The run reached what it is meant to reach: every route served a 200, and each kind of refusal
    // came up (a generator that stopped producing hostile input would fail here, not pass quietly).
    const statuses = new Set(outcomes.map((o) => o.response?.status));
    for (const s of [200, 400, 403, 404, 405, 413, 414, 415, 431])
      expect(statuses, `status ${s}`).toContain(s);
    for (const op of ops) {
      const served = outcomes.some((o) => o.request.op === op && o.response?.status === 200);
      expect(served, `${op.method} ${op.path} never answered 200`).toBe(true);
    }
    // JSON bodies with `__proto__` keys polluted nothing in this (the server's) process.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((await api.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  }, 120_000);
});
