import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../api/accounts/account.service.js';
import { buildApp } from '../api/app.js';
import { loadConfig } from '../shared/config.js';
import { createLogger, redactUrl } from '../shared/logger.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';

const TOKEN = 'test-admin-token-0123456789';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * A strict reader of the Prometheus text format (0.0.4): every line must be a HELP/TYPE comment or
 * a well-formed sample, or it throws. Returns the samples. Not-a-number is read in any case, as
 * Prometheus does: prom-client writes `Nan` (e.g. the event-loop lag mean before its first sample).
 */
function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  const sampleLine =
    /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})? ([Nn]a[Nn]|[+-]Inf|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?: -?\d+)?$/;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ') || /^# TYPE \S+ (counter|gauge|histogram|summary|untyped)$/.test(line))
      continue;
    const m = sampleLine.exec(line);
    if (!m) throw new Error(`not Prometheus text: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

let tdb: TestDb;
const queue = testQueuePrefix();
let app: FastifyInstance;
let bare: FastifyInstance;
let apiKey: string;
const logLines: string[] = [];

beforeAll(async () => {
  tdb = await createTestDb();
  const env = {
    DATABASE_URL: tdb.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: queue.prefix,
    LOG_LEVEL: 'info',
  };
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const config = loadConfig({ ...env, ADMIN_TOKEN: TOKEN });
  app = await buildApp({ config, logger: createLogger(config, {}, sink) });
  bare = await buildApp({ config: loadConfig(env) });
  apiKey = (await createAccount(tdb.db, { name: 'ops test', credits: 100, anchorDate: '2026-01-01' }))
    .api_key;
});

afterAll(async () => {
  await app?.close();
  await bare?.close();
  await queue.cleanup();
  await tdb?.drop();
});

describe('admin routes without ADMIN_TOKEN', () => {
  it('do not exist', async () => {
    for (const url of ['/metrics', '/admin/queues', '/admin/queues/api/queues']) {
      const res = await bare.inject({ url, headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.statusCode, url).toBe(404);
    }
  });
});

describe('/metrics', () => {
  it('requires the admin token', async () => {
    expect((await app.inject({ url: '/metrics' })).statusCode).toBe(401);
    const wrong = await app.inject({ url: '/metrics', headers: { authorization: 'Bearer not-the-token' } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toEqual({ code: 401, message: expect.stringMatching(/^Unauthorized: /) });
  });

  it('serves Prometheus text with request, credit, import, queue and index figures', async () => {
    await app.inject({ url: '/healthz' });
    const contact = await app.inject({
      method: 'POST',
      url: `/v1/contact?api_key=${apiKey}`,
      payload: { full_name: 'Ada Lovelace', email: 'ada@example.com' },
    });
    expect(contact.statusCode).toBe(200);
    const refused = await app.inject({ method: 'POST', url: '/v1/contact?api_key=bzk_nope', payload: {} });
    expect(refused.statusCode).toBe(403);

    const res = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const samples = parsePrometheus(res.body);
    const find = (name: string, labels: Record<string, string>) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

    expect(
      find('bizdir_http_requests_total', { route: '/healthz', status: '200', method: 'GET' })?.value,
    ).toBe(1);
    expect(find('bizdir_http_requests_total', { route: '/v1/contact', status: '403' })?.value).toBe(1);
    expect(
      find('bizdir_http_request_duration_seconds_count', { route: '/v1/contact', status: '200' })?.value,
    ).toBe(1);
    // Only the 200 costs a credit.
    expect(find('bizdir_credits_charged_total', { route: '/v1/contact' })?.value).toBe(1);
    expect(find('bizdir_queue_jobs', { queue: 'import', state: 'waiting' })?.value).toBe(0);
    expect(find('bizdir_queue_jobs', { queue: 'index', state: 'failed' })?.value).toBe(0);
    expect(samples.some((s) => s.name === 'bizdir_index_lag_seconds')).toBe(true);
    expect(res.body).toContain('# TYPE bizdir_import_rows gauge');
  });

  it('counts import rows by feed and outcome from the runs in Postgres', async () => {
    await tdb.db
      .insertInto('import_runs')
      .values({ feed: 'registrar', source: 'x.csv', status: 'succeeded', inserted: 7, rejected: 2 })
      .execute();
    const res = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    const samples = parsePrometheus(res.body);
    const rows = samples.filter((s) => s.name === 'bizdir_import_rows' && s.labels.feed === 'registrar');
    expect(Object.fromEntries(rows.map((s) => [s.labels.outcome, s.value]))).toMatchObject({
      inserted: 7,
      rejected: 2,
      updated: 0,
    });
  });
});

describe('/admin/queues', () => {
  it('asks a browser for the token and accepts it as Basic or Bearer', async () => {
    const none = await app.inject({ url: '/admin/queues' });
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Basic realm=/);

    const basic = Buffer.from(`admin:${TOKEN}`).toString('base64');
    const page = await app.inject({ url: '/admin/queues', headers: { authorization: `Basic ${basic}` } });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);

    const api = await app.inject({
      url: '/admin/queues/api/queues?activeQueue=import&status=latest&page=1',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(api.statusCode).toBe(200);
    const names = (api.json() as { queues: Array<{ name: string }> }).queues.map((q) => q.name).sort();
    expect(names).toEqual(['events', 'import', 'index', 'webhooks']);
  });
});

describe('logs', () => {
  it('carry the request id and never the api key', async () => {
    const res = await app.inject({ url: `/v1/org/nothing.bizdir.test?api_key=${apiKey}` });
    const requestId = res.headers['x-request-id'];
    const lines = logLines.filter((l) => l.includes(String(requestId)));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ reqId: requestId });
    expect(lines.some((l) => JSON.parse(l).route === '/v1/org/:domain')).toBe(true);
    expect(logLines.join('\n')).not.toContain(apiKey);
  });

  it('redact secret query values from any URL a request serializer logs', () => {
    expect(redactUrl(`/v1/org/x.bizdir.test?api_key=${apiKey}&limit=5`)).toBe(
      '/v1/org/x.bizdir.test?api_key=[redacted]&limit=5',
    );
  });
});
