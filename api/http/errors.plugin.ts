import { randomUUID } from 'node:crypto';
import { type IncomingMessage, maxHeaderSize, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { classifyError, errorBody } from './error-mapping.js';
import { serviceOf } from './infra.plugin.js';

/**
 * One error handler: every non-200 is `{code, message}` (docs/decisions.md, Errors) and nothing internal
 * reaches the client. A path that exists under another method answers 405 with `Allow`, any other
 * unknown route 404. A closing server answers new requests 503 in the same shape.
 */
export const errorsPlugin = fp(
  async (app) => {
    const routes: { pattern: RegExp; method: string }[] = [];
    // A path matches its route with or without one trailing slash, as the router does (ignoreTrailingSlash).
    app.addHook('onRoute', (route) => {
      const source = route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+');
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      for (const method of methods) routes.push({ pattern: new RegExp(`^${source}/?$`), method });
    });

    app.setErrorHandler(async (failure, request, reply) => {
      // A metered request whose credit reservation failed (spent, rate limited, revoked, Redis away)
      // answers with that, whatever else failed: a 400 or 404 never hides a 402 or 429.
      const error = (await reservationFailure(request)) ?? failure;
      const { status, reason, internal } = classifyError(error);
      if (status === 503 && internal && app.hasDecorator('outages')) {
        // A backing service is away: logged once per outage (infra plugin), not once per request.
        const outages = (
          app as unknown as { outages: Record<'postgres' | 'redis', { down(e: unknown): void }> }
        ).outages;
        outages[serviceOf(error)].down(error);
        request.log.debug({ err: error }, 'request failed: backing service unavailable');
      } else if (internal) request.log.error({ err: error }, 'request failed');
      return reply.code(status).type('application/json').send(errorBody(status, reason));
    });

    const noRoute = (request: FastifyRequest, reply: FastifyReply) => {
      const path = request.url.split('?')[0] ?? '/';
      const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
      // Answered from the first onRequest hook, before the one that would add it.
      reply.header('x-request-id', request.id);
      if (allowed.length > 0) {
        return reply
          .code(405)
          .header('allow', allowed.join(', '))
          .send(errorBody(405, `${request.method} is not allowed here; use ${allowed.join(' or ')}`));
      }
      return reply.code(404).send(errorBody(404, 'No route matches this path'));
    };
    // Answered before the body is read: a request no route takes gets its 404 or 405, not a 400 for
    // JSON nobody would parse or a 413 for a body nobody would read.
    app.addHook('onRequest', async (request, reply) => {
      if (request.is404) return noRoute(request, reply);
      const bad = malformedRequest(request);
      if (bad) return reply.code(400).header('x-request-id', request.id).send(errorBody(400, bad));
    });
    app.setNotFoundHandler(noRoute);

    // Requests that reach a server already closing (pipelined, or on a busy keep-alive connection).
    // Fastify's own answer to them (return503OnClosing, turned off in buildApp) has its own shape.
    let closing = false;
    app.addHook('preClose', async () => {
      closing = true;
    });
    app.addHook('onRequest', async (request, reply) => {
      if (!closing) return;
      return reply
        .code(503)
        .header('connection', 'close')
        .header('x-request-id', request.id)
        .send(errorBody(503, 'the server is shutting down, retry shortly'));
    });
  },
  { name: 'bizdir-errors' },
);

/**
 * An HTTP/1.1 request without Host (RFC 9112 3.2: 400). Node's own answer has no body, so its check
 * is turned off in buildApp and the request answered here. (A query string's bad escapes are taken
 * as plain text, as browsers take them: `q=50%` searches for `50%`.)
 */
function malformedRequest(request: FastifyRequest): string | null {
  if (request.raw.httpVersion === '1.1' && request.headers.host === undefined)
    return 'the request has no Host header';
  return null;
}

/**
 * Node answers an `Expect` other than `100-continue` with a bare 417 unless someone listens for it:
 * the same 417, in the service's shape.
 */
export function answerUnmetExpectation(_request: IncomingMessage, response: ServerResponse): void {
  const body = JSON.stringify(errorBody(417, 'only Expect: 100-continue is supported'));
  response.writeHead(417, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': randomUUID(),
    connection: 'close',
  });
  response.end(body);
}

/** The error the request's credit reservation (credits.plugin.ts) failed with, if it has one that failed. */
async function reservationFailure(request: FastifyRequest): Promise<unknown> {
  if (!request.reservation) return undefined;
  try {
    await request.reservation;
    return undefined;
  } catch (error) {
    return error;
  }
}

/**
 * Fastify's `frameworkErrors`: errors the router raises before any route or hook runs (a path that is
 * not valid percent-encoding, an overlong path parameter). Fastify's default body quotes the whole URL,
 * `api_key` included; this one says what is wrong and nothing else.
 */
export function frameworkErrorHandler(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const { status, reason } = classifyError(error);
  reply
    .code(status)
    .header('x-request-id', request.id)
    .type('application/json')
    .send(errorBody(status, reason));
}

/**
 * Node's HTTP parser refused the request (headers over the size limit, an unknown method, broken
 * framing, a request too slow to arrive): there is no request object, so the answer is written to
 * the socket, in our shape, and the connection closed, as Fastify's default handler does.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'the request did not arrive in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, `the request line and headers are larger than ${maxHeaderSize} bytes`]
        : error.code === 'HPE_INVALID_METHOD'
          ? [400, 'unknown HTTP method']
          : [400, 'the request is not valid HTTP/1.1'];
  const body = JSON.stringify(errorBody(status, reason));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${randomUUID()}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy(error);
}
