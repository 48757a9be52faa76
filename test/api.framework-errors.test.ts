import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { SUFFIX, startTestApi, useTestApi } from './support/api.js';
import { parseResponse, type RawResponse, rawExchange, rawRequest } from './support/raw-http.js';

/**
 * Errors Fastify and Node raise before a route runs, provoked the way a client would, over a real
 * socket (inject() normalizes URLs and skips Node's HTTP parser). Each must answer in the service's
 * own shape, `{code, message}` with `<Status text>: <reason>`, and never echo the URL or the api_key.
 */
let port: number;

const api = useTestApi({ credits: 1_000 });

beforeAll(async () => {
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  port = (api.app.server.address() as AddressInfo).port;
});

/** The service's error shape, exactly, and nothing of the caller's key anywhere in the answer. */
function expectError(res: RawResponse, status: number, message: string): void {
  expect({ status: res.status, body: JSON.parse(res.body) }).toEqual({
    status,
    body: { code: status, message },
  });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  expect(res.raw).not.toContain(api.key);
  expect(res.raw).not.toContain('FST_');
}

const BAD_URL = 'Bad Request: the path is not valid percent-encoded UTF-8';

describe('framework errors', () => {
  it.each([
    ['an overlong UTF-8 slash', '/v1/org/%C0%AF'],
    ['an encoded lone surrogate', '/v1/org/%ED%A0%80'],
    ['a bare %', '/v1/org/%'],
    ['a truncated escape', '/v1/location/%E0%A4%A'],
    ['not hex', '/v1/org/%zz/locations'],
  ])('a path with %s is 400, without echoing the URL or the api_key', async (_label, path) => {
    const res = await rawRequest(port, 'GET', `${path}?api_key=${api.key}`);
    expectError(res, 400, BAD_URL);
  });

  it('an HTTP/1.1 request without Host is 400 in our shape; HTTP/1.0 needs none', async () => {
    const res = parseResponse(
      await rawExchange(port, `GET /v1/usage?api_key=${api.key} HTTP/1.1\r\nconnection: close\r\n\r\n`),
    );
    expectError(res, 400, 'Bad Request: the request has no Host header');
    const old = parseResponse(await rawExchange(port, `GET /v1/usage?api_key=${api.key} HTTP/1.0\r\n\r\n`));
    expect(old.status).toBe(200);
  });

  it('an Expect other than 100-continue is 417 in our shape', async () => {
    const res = await rawRequest(port, 'GET', `/v1/usage?api_key=${api.key}`, {
      headers: { expect: 'teapot' },
    });
    expectError(res, 417, 'Expectation Failed: only Expect: 100-continue is supported');
  });

  it('every legal domain reaches its route (up to 253 characters) and gets 404 when nothing matches', async () => {
    const label = (c: string) => c.repeat(63);
    // Two 63-character labels: the Org domain of the report.
    const twoLabels = `${label('a')}.${label('b')}.${SUFFIX}`;
    // The longest legal name: 253 characters with the suffix.
    const longest = `${label('c')}.${label('d')}.${label('e')}.${'f'.repeat(253 - 3 * 64 - SUFFIX.length - 1)}.${SUFFIX}`;
    expect(longest).toHaveLength(253);
    for (const domain of [twoLabels, longest, `${longest}.`]) {
      for (const path of [`/v1/org/${domain}`, `/v1/org/${domain}/locations`]) {
        expectError(
          await rawRequest(port, 'GET', `${path}?api_key=${api.key}`),
          404,
          'Not Found: No Org exists for this domain',
        );
      }
      expectError(
        await rawRequest(port, 'GET', `/v1/location/${domain}?api_key=${api.key}`),
        404,
        'Not Found: No Location exists for this domain',
      );
    }
  });

  it('a path segment past any domain is 414 in our shape, without echoing it', async () => {
    const long = 'x'.repeat(2_000);
    const res = await rawRequest(port, 'GET', `/v1/org/${long}?api_key=${api.key}`);
    expectError(res, 414, 'URI Too Long: a path segment is longer than 300 characters');
    expect(res.raw).not.toContain(long);
  });

  it.each([
    ['text/plain', 'full_name=A B'],
    ['application/x-www-form-urlencoded', 'full_name=A+B'],
    ['multipart/form-data; boundary=x', '--x\r\n\r\nA B\r\n--x--'],
    ['application/xml', '<full_name>A B</full_name>'],
  ])('a body of type %s is 415', async (type, body) => {
    const res = await rawRequest(port, 'POST', `/v1/contact?api_key=${api.key}`, {
      headers: { 'content-type': type },
      body,
    });
    expectError(res, 415, 'Unsupported Media Type: Content-Type must be application/json');
  });

  it('a body without a content type is 415', async () => {
    const res = await rawRequest(port, 'POST', `/v1/contact?api_key=${api.key}`, {
      body: '{"full_name":"A B"}',
    });
    expectError(res, 415, 'Unsupported Media Type: Content-Type must be application/json');
  });

  it.each([
    ['a trailing comma', '{"full_name":"A B",}'],
    ['a cut-off body', '{"full_name":"A'],
    ['a __proto__ key', '{"full_name":"A B","__proto__":{"admin":true}}'],
    ['a constructor.prototype key', '{"full_name":"A B","constructor":{"prototype":{"admin":true}}}'],
    ['an empty body', ''],
  ])('JSON with %s is 400', async (_label, body) => {
    const res = await rawRequest(port, 'POST', `/v1/contact?api_key=${api.key}`, {
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(400);
    expectError(res, 400, JSON.parse(res.body).message);
    expect(JSON.parse(res.body).message).toMatch(/^Bad Request: (body is not valid JSON|full_name )/);
  });

  it('a body over 16 KiB is 413, whether it is sent or only announced', async () => {
    const big = JSON.stringify({ full_name: 'x'.repeat(20_000) });
    const sent = await rawRequest(port, 'POST', `/v1/contact?api_key=${api.key}`, {
      headers: { 'content-type': 'application/json' },
      body: big,
    });
    expectError(sent, 413, 'Payload Too Large: request body is too large');
    const announced = await rawExchange(
      port,
      `POST /v1/contact?api_key=${api.key} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n` +
        'content-length: 1000000\r\nconnection: close\r\n\r\n{"full_name":',
    );
    expectError(parseResponse(announced), 413, 'Payload Too Large: request body is too large');
  });

  it('a method the path does not have is 405 with Allow; one HTTP does not know is 400', async () => {
    for (const method of ['DELETE', 'PUT', 'PATCH', 'PROPFIND']) {
      const res = await rawRequest(port, method, `/v1/org/x.${SUFFIX}?api_key=${api.key}`);
      expectError(res, 405, `Method Not Allowed: ${method} is not allowed here; use GET`);
      expect(res.headers.allow).toBe('GET');
    }
    const unknown = await rawRequest(port, 'FROB', `/v1/org/x.${SUFFIX}?api_key=${api.key}`);
    expectError(unknown, 400, 'Bad Request: unknown HTTP method');
  });

  it('headers or a request line over the limit are 431 in our shape', async () => {
    const header = await rawRequest(port, 'GET', `/v1/org/x.${SUFFIX}?api_key=${api.key}`, {
      headers: { 'x-padding': 'p'.repeat(20_000) },
    });
    expectError(header, 431, expect.stringMatching(/^Request Header Fields Too Large: /));
    const line = await rawRequest(port, 'GET', `/v1/org/search?api_key=${api.key}&q=${'q'.repeat(20_000)}`);
    expect(line.status).toBe(431);
    expect(JSON.parse(line.body)).toEqual({ code: 431, message: JSON.parse(header.body).message });
    expect(line.raw).not.toContain(api.key);
  });

  it('a request that is not HTTP at all is 400 in our shape', async () => {
    for (const request of [
      `GET /v1/org/a b?api_key=${api.key} HTTP/1.1\r\nhost: x\r\n\r\n`,
      `GET /v1/org/x HTTP/1.1\r\nhost: x\r\nbad header\r\n\r\n`,
      'GET /v1/org/x HTTP/9.9\r\n\r\n',
      `POST /v1/contact?api_key=${api.key} HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n`,
    ]) {
      const res = parseResponse(await rawExchange(port, request));
      expectError(res, 400, 'Bad Request: the request is not valid HTTP/1.1');
    }
  });
});

describe('the API docs', () => {
  it('redirect without repeating the query string (and its api_key)', async () => {
    const res = await rawRequest(port, 'GET', `/docs/static/index.html?api_key=${api.key}`);
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe('/docs/static/index.html');
    expect(res.raw).not.toContain(api.key);
    const next = await rawRequest(port, 'GET', res.headers.location!);
    expect({ status: next.status, location: next.headers.location }).toEqual({
      status: 302,
      location: '/docs/',
    });
  });
});

describe('validation messages', () => {
  it('an empty domain is 400 "must not be empty", in words rather than the validator\'s', async () => {
    const res = await rawRequest(port, 'GET', `/v1/org//locations?api_key=${api.key}`);
    expectError(res, 400, 'Bad Request: domain must not be empty');
  });

  it('quote at most 64 characters of a name the client chose', async () => {
    const name = 'n'.repeat(10_000);
    const res = await rawRequest(port, 'POST', `/v1/contact?api_key=${api.key}`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ full_name: 'A B', [name]: 1 }),
    });
    expectError(res, 400, `Bad Request: unknown field ${'n'.repeat(64)}…`);
    const query = await rawRequest(port, 'GET', `/v1/org/search?api_key=${api.key}&${name}=%00`);
    expectError(
      query,
      400,
      `Bad Request: ${'n'.repeat(64)}… must not contain NUL or unpaired surrogate characters`,
    );
  });
});

describe('a server that is closing', () => {
  it('answers a request still arriving on an open connection 503 in our shape', async () => {
    const closingApp = await startTestApi({ databaseUrl: api.t.url, prefix: api.prefix, ready: false });
    let release = () => {};
    let started = () => {};
    const inFlight = new Promise<void>((resolve) => {
      started = resolve;
    });
    closingApp.get('/test-slow', async () => {
      started();
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return { status: 'ok' };
    });
    await closingApp.listen({ host: '127.0.0.1', port: 0 });
    const closingPort = (closingApp.server.address() as AddressInfo).port;
    const net = await import('node:net');
    const socket = net.connect(closingPort, '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (chunk) => received.push(chunk));
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write('GET /test-slow HTTP/1.1\r\nhost: x\r\n\r\n');
    await inFlight;
    const closed = closingApp.close();
    // The first request keeps its connection busy, so close() leaves it open for the second.
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.write(`GET /v1/org/x.${SUFFIX}?api_key=${api.key} HTTP/1.1\r\nhost: x\r\n\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    release();
    await ended;
    await closed;
    const text = Buffer.concat(received).toString('utf8');
    const second = text.slice(text.indexOf('HTTP/1.1', 1));
    expect(text.startsWith('HTTP/1.1 200')).toBe(true);
    expectError(
      parseResponse(second),
      503,
      'Service Unavailable: the server is shutting down, retry shortly',
    );
  });
});
