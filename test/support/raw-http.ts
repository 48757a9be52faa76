import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Everything the server wrote, as text. */
  raw: string;
}

/**
 * Writes bytes to a listening server and reads until it closes the connection: what a hostile client
 * can send that no HTTP library would (bad methods, unencoded paths, headers over the limit), and what
 * `inject()` cannot show (it normalizes URLs and skips Node's HTTP parser).
 */
export function rawExchange(port: number, request: string | Buffer, timeoutMs = 5_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    // The server may close while we are still writing (a header over the limit): what it said counts.
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    // Not end(): Node's server aborts a request whose client half-closes before the answer. Requests
    // ask for `Connection: close`, so the server ends the exchange.
    socket.write(request);
  });
}

/** Splits one HTTP/1.1 response (the first, when several came back). */
export function parseResponse(raw: string): RawResponse {
  const headEnd = raw.indexOf('\r\n\r\n');
  if (headEnd < 0) throw new Error(`not an HTTP response: ${JSON.stringify(raw.slice(0, 200))}`);
  const [statusLine, ...lines] = raw.slice(0, headEnd).split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let rest = raw.slice(headEnd + 4);
  let body: string;
  if (headers['transfer-encoding'] === 'chunked') {
    body = '';
    for (;;) {
      const eol = rest.indexOf('\r\n');
      const size = Number.parseInt(rest.slice(0, eol), 16);
      if (!(size > 0)) break;
      body += rest.slice(eol + 2, eol + 2 + size);
      rest = rest.slice(eol + 2 + size + 2);
    }
  } else {
    const length = headers['content-length'];
    body = length === undefined ? rest : Buffer.from(rest).subarray(0, Number(length)).toString('utf8');
  }
  return { status, headers, body, raw };
}

/** One request over its own connection (`Connection: close`), parsed. */
export async function rawRequest(
  port: number,
  method: string,
  target: string,
  options: { headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> {
  const body = options.body ?? '';
  const headers: Record<string, string> = { host: '127.0.0.1', connection: 'close', ...options.headers };
  if (body !== '' || method === 'POST') headers['content-length'] = String(Buffer.byteLength(body));
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return parseResponse(await rawExchange(port, `${method} ${target} HTTP/1.1\r\n${head}\r\n${body}`));
}
