import fc from 'fast-check';
import {
  CONTENT_TYPES,
  EXTRA_HEADERS,
  HOSTILE,
  METHODS,
  ODD_PATHS,
  RAW_BODIES,
  RAW_URL_FRAGMENTS,
} from './fuzz-values.js';

/**
 * Hostile HTTP requests for the API fuzz test (test/api.fuzz.test.ts), generated from the routes the
 * app documents in its own OpenAPI document, so a new route is fuzzed without touching this file.
 * Requests are whole byte strings for a raw socket: what a browser or HTTP library would refuse to
 * send is exactly what a hostile client sends.
 */
export interface Operation {
  method: string;
  /** OpenAPI form: `/v1/org/{domain}`. */
  path: string;
  pathParams: string[];
  query: { name: string; schema: ParamSchema }[];
  /** Properties of a JSON body, or null when the operation takes none. */
  bodyFields: string[] | null;
}

interface ParamSchema {
  type?: string;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  examples?: unknown[];
  enum?: unknown[];
}

interface OpenApiDoc {
  paths: Record<string, Record<string, OpenApiOperation>>;
}
interface OpenApiOperation {
  parameters?: { in: string; name: string; schema?: ParamSchema }[];
  requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> };
}

/** Every operation of an OpenAPI 3 document. */
export function operationsOf(doc: OpenApiDoc): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const params = op.parameters ?? [];
      const body = op.requestBody?.content?.['application/json']?.schema;
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        bodyFields: body ? Object.keys(body.properties ?? {}) : null,
      });
    }
  }
  return ops;
}

export type KeyKind =
  | 'valid'
  | 'missing'
  | 'unknown'
  | 'revoked'
  | 'wrong-case'
  | 'repeated'
  | 'array'
  | 'truncated'
  | 'hostile';

export interface FuzzContext {
  ops: readonly Operation[];
  /** Domains of stored Orgs and Locations (stable, public, old public): requests that can succeed. */
  domains: readonly string[];
  /** Values that name something stored, by path parameter (`id`: webhook endpoints); default the domains. */
  pathValues?: Readonly<Record<string, readonly string[]>>;
  validKey: string;
  revokedKey: string;
}

export interface FuzzRequest {
  op: Operation | null;
  method: string;
  keyKind: KeyKind;
  /** The whole request, as written to the socket. */
  bytes: Buffer;
  /** For failure reports: the request line and what was special about it. */
  summary: string;
}

/** Draws one value (fast-check's `fc.gen()`, with the arbitrary given directly). */
type Draw = <T>(arb: fc.Arbitrary<T>) => T;

const textArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...HOSTILE) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.double()).map(String) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom('a', 'é', '😀', '%', '\u0000', ' ', '.'),
        fc.constantFrom(63, 200, 201, 254, 301, 2_000, 10_000),
      )
      .map(([c, n]) => c.repeat(n)),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom(...HOSTILE), fc.constantFrom(...HOSTILE)).map(([a, b]) => a + b),
  },
);

/** Percent-encodes every UTF-16 unit's bytes; a lone surrogate becomes its (invalid) 3-byte form. */
function encodeBytes(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    let bytes: number[];
    if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      bytes = [...Buffer.from(text.slice(i, i + 2))];
      i++;
    } else if (code >= 0xd800 && code <= 0xdfff) {
      bytes = [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)];
    } else bytes = [...Buffer.from(text[i]!)];
    out += bytes.map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
  }
  return out;
}

/** Text as it goes into a URL: properly encoded, byte-encoded, or raw where the request line allows. */
function urlValue(g: Draw, text: string): string {
  const mode = g(fc.constantFrom('component', 'component', 'bytes', 'raw', 'fragment'));
  if (mode === 'fragment') return g(fc.constantFrom(...RAW_URL_FRAGMENTS)) + encodeURIComponentSafe(text);
  if (mode === 'bytes') return encodeBytes(text);
  // Raw: printable ASCII stays, anything that would end the request line is encoded.
  if (mode === 'raw') return text.replace(/[^\x21-\x7e]/gu, (c) => encodeBytes(c));
  return encodeURIComponentSafe(text);
}

function encodeURIComponentSafe(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return encodeBytes(text);
  }
}

const flipCase = (s: string) =>
  s.replace(/[a-zA-Z]/g, (c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()));

function apiKeyParams(g: Draw, ctx: FuzzContext, kind: KeyKind): string[] {
  const key = (v: string) => `api_key=${urlValue(g, v)}`;
  switch (kind) {
    case 'valid':
      return [`api_key=${ctx.validKey}`];
    case 'missing':
      return [];
    case 'unknown':
      return [`api_key=bzk_${g(fc.stringMatching(/^[A-Za-z0-9_-]{43}$/))}`];
    case 'revoked':
      return [`api_key=${ctx.revokedKey}`];
    case 'wrong-case':
      return [`api_key=${flipCase(ctx.validKey)}`];
    case 'repeated':
      return [`api_key=${ctx.validKey}`, `api_key=${g(fc.constantFrom(ctx.validKey, ctx.revokedKey, ''))}`];
    case 'array':
      return [`api_key[]=${ctx.validKey}`, `api_key[0]=${ctx.validKey}`][g(fc.nat(1))]!.split('&');
    case 'truncated':
      return [`api_key=${ctx.validKey.slice(0, g(fc.integer({ min: 0, max: ctx.validKey.length - 1 })))}`];
    case 'hostile':
      return [key(g(textArb))];
  }
}

/** A plausible value for a documented query parameter (often valid, so the route's handler runs). */
function queryValue(g: Draw, schema: ParamSchema): string {
  if (g(fc.nat(9)) < 4) return g(textArb);
  if (schema.type === 'integer') {
    const min = schema.minimum ?? 0;
    const max = schema.maximum ?? 10_000;
    return String(g(fc.integer({ min: min - 2, max: max + 2 })));
  }
  const examples = [...(schema.examples ?? []), ...(schema.enum ?? [])].map(String);
  if (examples.length > 0 && g(fc.boolean())) return g(fc.constantFrom(...examples));
  return g(fc.constantFrom('acme', 'ltd', 'a', 'harbour', 'glen', 'x', 'WIDGETS', ''));
}

/** Body fields of the webhook routes: sensible more often, or no request would ever get past validation. */
const WEBHOOK_FIELDS = new Set(['url', 'types', 'batch', 'after', 'from', 'to']);

/** A JSON value for a body field: sensible for the field, or hostile text, or the wrong type. */
function bodyValue(g: Draw, field: string): unknown {
  const pick = g(fc.nat(9));
  if (pick < (WEBHOOK_FIELDS.has(field) ? 9 : 4)) {
    if (field.includes('email') && field !== 'email_opt_out') return `fuzz${g(fc.nat(99_999))}@example.com`;
    if (field === 'email_opt_out') return g(fc.boolean());
    if (field.endsWith('_url') || field.endsWith('_handle')) return 'https://example.com/fuzz';
    // Webhook endpoints and replays (the fuzz test's resolver knows hooks.example.com).
    if (field === 'url')
      return g(
        fc.constantFrom(
          'https://hooks.example.com/a',
          'https://hooks.example.com/b',
          'http://hooks.example.com/',
        ),
      );
    if (field === 'types')
      return g(fc.constantFrom(['*'], ['*'], ['org.*', 'location.closed'], ['org.nothing']));
    if (field === 'batch') return g(fc.boolean());
    if (field === 'after') return g(fc.constantFrom('0-0', '1-1', '0-0', '18446744073709551615-1', 'x-1'));
    if (field === 'from' || field === 'to')
      return g(fc.constantFrom('2026-01-01T00:00:00Z', '2026-02-30', ''));
    if (field === 'country_code') return g(fc.constantFrom('GB', 'US', 'gb', 'XX'));
    if (field === 'state_code') return g(fc.constantFrom('CA', 'NY', 'ZZ', 'ca'));
    return g(fc.constantFrom('Ada Lovelace', 'Dr Grace Hopper', 'Zoë 😀', 'Acme Ltd', '1 High Street'));
  }
  if (pick < 8) return g(textArb);
  return g(
    fc.oneof(
      fc.integer(),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.string(), { maxLength: 3 }),
      fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
    ),
  );
}

function buildRequest(g: Draw, ctx: FuzzContext): FuzzRequest {
  const oddPath = g(fc.nat(19)) === 0;
  // Routes with more to get wrong (parameters, a body) get more requests than the health probes.
  const op = oddPath
    ? null
    : g(
        fc.oneof(
          ...ctx.ops.map((o) => ({
            weight: 1 + 2 * o.pathParams.length + o.query.length + (o.bodyFields ? 4 : 0),
            arbitrary: fc.constant(o),
          })),
        ),
      );
  const methodRoll = g(fc.nat(19));
  const method = op && methodRoll < 17 ? op.method : g(fc.constantFrom(...METHODS));
  // Mostly the valid key, so requests get past authentication to the parts that parse and query.
  const keyKind: KeyKind = g(
    fc.oneof(
      { weight: 10, arbitrary: fc.constant<KeyKind>('valid') },
      {
        weight: 6,
        arbitrary: fc.constantFrom<KeyKind>(
          'missing',
          'unknown',
          'revoked',
          'wrong-case',
          'repeated',
          'array',
          'truncated',
          'hostile',
        ),
      },
    ),
  );
  const notes: string[] = [];

  let path: string;
  if (!op) {
    path = g(fc.constantFrom(...ODD_PATHS));
    if (g(fc.boolean())) path += urlValue(g, g(textArb));
  } else {
    path = op.path.replace(/\{([^}]+)\}/g, (_whole, name: string) => {
      const known = ctx.pathValues?.[name] ?? ctx.domains;
      if (g(fc.nat(9)) < 6 && known.length > 0) {
        const domain = g(fc.constantFrom(...known));
        return g(
          fc
            .constantFrom(domain, domain, domain.toUpperCase(), `${domain}.`, ` ${domain}`)
            .map(encodeURIComponentSafe),
        );
      }
      return urlValue(g, g(textArb));
    });
  }

  const params = apiKeyParams(g, ctx, keyKind);
  for (const q of op?.query ?? []) {
    if (q.name === 'api_key' || g(fc.nat(9)) < 5) continue;
    const times = g(fc.nat(9)) === 0 ? 2 : 1;
    const name = g(fc.nat(19)) === 0 ? `${q.name}[]` : q.name;
    for (let i = 0; i < times; i++) params.push(`${name}=${urlValue(g, queryValue(g, q.schema))}`);
  }
  if (g(fc.nat(9)) === 0) params.push(`${urlValue(g, g(textArb))}=${urlValue(g, g(textArb))}`);
  if (g(fc.nat(19)) === 0)
    params.push(g(fc.constantFrom('__proto__[x]=1', 'constructor[prototype][x]=1', '&&', '=', '%')));
  const shuffled = g(fc.nat(4)) === 0 ? params.reverse() : params;
  const target = shuffled.length > 0 ? `${path}?${shuffled.join('&')}` : path;

  const headers: [string, string][] = [['host', '127.0.0.1']];
  let body: Buffer | null = null;
  const wantsBody = op?.bodyFields ? g(fc.nat(9)) < 9 : g(fc.nat(9)) === 0;
  if (wantsBody) {
    const fields = op?.bodyFields ?? ['full_name'];
    let text: string | Buffer;
    if (g(fc.nat(9)) < 7) {
      const obj: Record<string, unknown> = {};
      const chosen = g(fc.subarray(fields, { maxLength: Math.min(6, fields.length) }));
      // A contact's name, most of the time (only where the route takes one).
      if (g(fc.nat(3)) > 0 && fields.includes('full_name')) obj.full_name = bodyValue(g, 'full_name');
      for (const f of chosen) obj[f] = bodyValue(g, f);
      if (g(fc.nat(9)) === 0)
        obj[g(fc.constantFrom('isAdmin', 'id', 'account_id', 'created', '', 'x'.repeat(100)))] = 1;
      // Around the 16 KiB body limit and far past it.
      if (g(fc.nat(14)) === 0) obj.line1 = 'x'.repeat(g(fc.constantFrom(16_300, 16_384, 20_000, 100_000)));
      text = JSON.stringify(obj);
      notes.push(`body ${text.slice(0, 120)}`);
    } else {
      text = g(fc.constantFrom(...RAW_BODIES));
      notes.push(`raw body ${JSON.stringify(text.toString().slice(0, 80))}`);
    }
    body = Buffer.isBuffer(text) ? text : Buffer.from(text);
    const type = g(fc.nat(9)) < 6 ? 'application/json' : g(fc.constantFrom(...CONTENT_TYPES));
    if (type !== '') headers.push(['content-type', type]);
    notes.push(`content-type ${JSON.stringify(type)}`);
  }
  if (g(fc.nat(9)) === 0) {
    const extra = g(fc.constantFrom(...EXTRA_HEADERS));
    // Framing headers are the request's own below; a second one is the smuggling case to test.
    headers.push(extra);
    notes.push(`header ${extra[0]}: ${extra[1].slice(0, 40)}`);
  }
  const chunked = headers.some(([k, v]) => k === 'transfer-encoding' && v === 'chunked');
  if (chunked) {
    // Always a complete chunked body (a server waiting for more would only time out); with a body the
    // request also carries Content-Length below when it is a POST: both at once is request smuggling.
    const data = body ?? Buffer.alloc(0);
    const chunk =
      data.length > 0 ? [Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')] : [];
    body = Buffer.concat([...chunk, Buffer.from('0\r\n\r\n')]);
    if (method === 'POST' && data.length > 0) headers.push(['content-length', String(data.length)]);
  } else if (body || method === 'POST') headers.push(['content-length', String(body?.length ?? 0)]);
  headers.push(['connection', 'close']);

  const head = `${method} ${target} HTTP/1.1\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  const bytes = Buffer.concat([Buffer.from(head, 'latin1'), body ?? Buffer.alloc(0)]);
  const line = `${method} ${target.length > 200 ? `${target.slice(0, 200)}…(${target.length})` : target}`;
  return { op, method, keyKind, bytes, summary: [line, `key ${keyKind}`, ...notes].join(' | ') };
}

/** `runs` requests, the same ones for the same seed. */
export function fuzzRequests(ctx: FuzzContext, seed: number, runs: number): FuzzRequest[] {
  return fc.sample(
    fc.gen().map((g) => buildRequest((arb) => g(() => arb), ctx)),
    { seed, numRuns: runs },
  );
}
