import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { HostResolver } from '../webhooks/address-guard.js';
import { createReceiverClient, MAX_ANSWER_BYTES, parseRetryAfter } from '../webhooks/receiver-client.js';

const resolver =
  (names: Record<string, string>): HostResolver =>
  async (host) => {
    const address = names[host];
    if (!address) throw new Error(`getaddrinfo ENOTFOUND ${host}`);
    return [{ address, family: address.includes(':') ? 6 : 4 }];
  };

/** A TCP server that only counts connections: a refused receiver must never be connected to. */
async function connectionCounter(
  host: string,
): Promise<{ server: TcpServer; port: number; count(): number }> {
  let connections = 0;
  const server = createTcpServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, port: (server.address() as AddressInfo).port, count: () => connections };
}

async function httpServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; url: string; requests: IncomingMessage[] }> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});
const closeServer = (server: Server | TcpServer) => () =>
  new Promise<void>((resolve) => {
    (server as Server).closeAllConnections?.();
    server.close(() => resolve());
  });

describe('the receiver client refuses the private network at every connection', () => {
  let v4: Awaited<ReturnType<typeof connectionCounter>>;
  let v6: Awaited<ReturnType<typeof connectionCounter>>;
  beforeAll(async () => {
    v4 = await connectionCounter('127.0.0.1');
    v6 = await connectionCounter('::1');
  });
  afterAll(async () => {
    await closeServer(v4.server)();
    await closeServer(v6.server)();
  });

  // Only loopback forms are tried over a real socket: were the guard broken, a test of 10.x or
  // 169.254.169.254 would send traffic there. Those are refused by the same resolveAllowed the
  // lookup calls (test/webhooks.guard.test.ts).
  it.each([
    [
      'a name resolving to 127.0.0.1',
      'https://loopback.test:PORT4/hook',
      /loopback address \(127\.0\.0\.1\)/,
    ],
    ['a name resolving to ::1', 'https://v6.test:PORT6/hook', /loopback address \(::1\)/],
    ['a name resolving to ::ffff:127.0.0.1', 'https://mapped.test:PORT4/hook', /loopback address/],
    ['the literal 127.0.0.1', 'https://127.0.0.1:PORT4/hook', /127\.0\.0\.1 is a loopback address/],
    ['the literal [::1]', 'https://[::1]:PORT6/hook', /::1 is a loopback address/],
    ['the literal [::ffff:127.0.0.1]', 'https://[::ffff:127.0.0.1]:PORT4/hook', /is a loopback address/],
    ['plain http', 'http://public.test:PORT4/hook', /plain http/],
  ])('refuses %s', async (_what, template, message) => {
    const client = createReceiverClient({
      allowPrivate: false,
      resolve: resolver({
        'loopback.test': '127.0.0.1',
        'v6.test': '::1',
        'mapped.test': '::ffff:127.0.0.1',
        'public.test': '93.184.216.34',
      }),
    });
    closers.push(() => client.close());
    const before = v4.count() + v6.count();
    const url = template.replace('PORT4', String(v4.port)).replace('PORT6', String(v6.port));
    const answer = await client.post(url, {}, '{}');
    expect(answer.status).toBeNull();
    expect(answer.error).toMatch(message);
    expect(v4.count() + v6.count()).toBe(before);
  });

  it('refuses a name that resolved to a public address before and to loopback now (DNS rebinding)', async () => {
    let calls = 0;
    const rebinding: HostResolver = async () => [
      calls++ === 0 ? { address: '93.184.216.34', family: 4 } : { address: '127.0.0.1', family: 4 },
    ];
    // The endpoint's creation-time check sees the public address...
    expect(await rebinding('rebind.test')).toEqual([{ address: '93.184.216.34', family: 4 }]);
    const client = createReceiverClient({ allowPrivate: false, resolve: rebinding });
    closers.push(() => client.close());
    const before = v4.count();
    // ...the connection, made later, resolves again and is refused.
    const answer = await client.post(`https://rebind.test:${v4.port}/`, {}, '{}');
    expect(answer.error).toMatch(/rebind\.test resolves to a loopback address/);
    expect(v4.count()).toBe(before);
  });
});

describe('the receiver client', () => {
  it('posts the body with its headers and reads the answer', async () => {
    const seen: { headers: IncomingMessage['headers']; body: string }[] = [];
    const receiver = await httpServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        seen.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    closers.push(closeServer(receiver.server));
    const client = createReceiverClient({ allowPrivate: true });
    closers.push(() => client.close());
    const answer = await client.post(`${receiver.url}/hook`, { 'webhook-id': 'msg_1' }, '{"a":1}');
    expect(answer).toMatchObject({ status: 204, error: null, body: '' });
    expect(seen[0]?.body).toBe('{"a":1}');
    expect(seen[0]?.headers['webhook-id']).toBe('msg_1');
    expect(seen[0]?.headers['content-type']).toBe('application/json');
  });

  it('does not follow a redirect, even to an address it may reach', async () => {
    const target = await httpServer((_req, res) => res.writeHead(200).end());
    closers.push(closeServer(target.server));
    const redirecting = await httpServer((_req, res) =>
      res.writeHead(307, { location: `${target.url}/` }).end(),
    );
    closers.push(closeServer(redirecting.server));
    const client = createReceiverClient({ allowPrivate: true });
    closers.push(() => client.close());
    const answer = await client.post(`${redirecting.url}/`, {}, '{}');
    expect(answer.status).toBe(307);
    expect(answer.error).toMatch(/redirects are not followed/);
    expect(target.requests).toHaveLength(0);
  });

  it('reads at most 64 KB of an answer', async () => {
    const big = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('x'.repeat(1024 * 1024));
    });
    closers.push(closeServer(big.server));
    const client = createReceiverClient({ allowPrivate: true });
    closers.push(() => client.close());
    const answer = await client.post(`${big.url}/`, {}, '{}');
    expect(answer.status).toBe(200);
    expect(answer.body.length).toBe(MAX_ANSWER_BYTES);
  });

  it('gives up on a receiver that does not answer in time', async () => {
    const silent = await httpServer(() => undefined);
    closers.push(closeServer(silent.server));
    const client = createReceiverClient({ allowPrivate: true, timeoutMs: 300 });
    closers.push(() => client.close());
    const answer = await client.post(`${silent.url}/`, {}, '{}');
    expect(answer.status).toBeNull();
    expect(answer.error).toMatch(/no answer within 0.3 s/);
    expect(answer.durationMs).toBeGreaterThanOrEqual(250);
  });

  it('reports a refused connection as no answer', async () => {
    const gone = await connectionCounter('127.0.0.1');
    await closeServer(gone.server)();
    const client = createReceiverClient({ allowPrivate: true });
    closers.push(() => client.close());
    const answer = await client.post(`http://127.0.0.1:${gone.port}/`, {}, '{}');
    expect(answer.status).toBeNull();
    expect(answer.error).toMatch(/ECONNREFUSED/);
  });

  it('reads Retry-After as seconds or as a date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });
});
