import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from '../http/error-mapping.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Constant-time comparison (hashing first makes the lengths equal). */
function sameToken(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * The token a request carries: `Authorization: Bearer <token>` (scripts, Prometheus), or HTTP Basic
 * with the token as password and any user name, which is what a browser can do by itself: the
 * dashboard's page, its assets and its API calls all carry it once the user has typed it.
 */
function presentedToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const [scheme, value = ''] = header.split(/\s+/, 2);
  if (scheme?.toLowerCase() === 'bearer') return value;
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : undefined;
  }
  return undefined;
}

/** Whether the request carries the admin token (`token`, the configured ADMIN_TOKEN). */
export function carriesAdminToken(request: FastifyRequest, token: string): boolean {
  const given = presentedToken(request);
  return given !== undefined && sameToken(given, token);
}

/**
 * onRequest guard for /admin/* and /metrics (docs/decisions.md, Configuration). With no ADMIN_TOKEN the
 * ops plugin registers no routes at all, so they answer the API's ordinary 404. Here: a missing or
 * wrong token gets 401, with a Basic challenge so a browser asks for it.
 */
export function adminGuard(token: string) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (carriesAdminToken(request, token)) return;
    return reply
      .code(401)
      .header('www-authenticate', 'Basic realm="bizdir admin", charset="UTF-8"')
      .send(errorBody(401, 'An admin token is required (Authorization: Bearer <ADMIN_TOKEN>)'));
  };
}
