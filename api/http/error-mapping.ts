import { STATUS_CODES } from 'node:http';
import type { FastifyError } from 'fastify';
import { HttpError } from '../../shared/errors.js';

/**
 * Longest path parameter the router accepts (Fastify's default is 100): every legal domain (253
 * characters, 254 with a trailing dot) must reach its route and get a 404 when nothing matches.
 */
export const MAX_PATH_PARAM_LENGTH = 300;

export interface ErrorBody {
  code: number;
  message: string;
}

export const errorBody = (status: number, reason: string): ErrorBody => ({
  code: status,
  message: `${STATUS_CODES[status] ?? 'Error'}: ${reason}`,
});

const PG_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '53300', '53400', '57014']);
const NET_UNAVAILABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EPIPE',
]);

/** A backing service (Postgres, Redis) is away or overloaded: the client should retry, not us crash. */
export function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (
    typeof code === 'string' &&
    (NET_UNAVAILABLE.has(code) || PG_UNAVAILABLE.has(code) || code.startsWith('08'))
  )
    return true;
  if (error.name === 'MaxRetriesPerRequestError') return true;
  return /timeout exceeded when trying to connect|Connection terminated|Stream isn't writeable|Connection is closed|Command timed out|connect ECONNREFUSED/i.test(
    error.message,
  );
}

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
  parentSchema?: { minimum?: number; maximum?: number; type?: unknown; format?: string };
}

/** A client-chosen name quoted in a message: bounded, so a 10 KB parameter name is not sent back whole. */
const clip = (name: string) => (name.length > 64 ? `${name.slice(0, 64)}…` : name);

/** A schema validation failure as one sentence naming the field. */
export function validationReason(errors: readonly AjvError[], context: string | undefined): string {
  const e = errors[0];
  if (!e) return 'invalid request';
  if (e.keyword === 'additionalProperties')
    return `unknown field ${clip(String(e.params.additionalProperty))}`;
  if (e.keyword === 'required') return `${String(e.params.missingProperty)} is required`;
  const field = clip(
    e.instancePath.replace(/^\//, '').replace(/\//g, '.') ||
      (context === 'body' ? 'body' : (context ?? 'request')),
  );
  const s = e.parentSchema ?? {};
  if (s.type === 'integer' && (s.minimum !== undefined || s.maximum !== undefined)) {
    if (s.maximum !== undefined)
      return `${field} must be an integer between ${s.minimum ?? 0} and ${s.maximum}`;
    return `${field} must be an integer of at least ${s.minimum}`;
  }
  if (e.keyword === 'type') {
    const type = String(e.params.type);
    return field === 'body'
      ? 'body must be a JSON object'
      : `${field} must be ${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
  }
  if (e.keyword === 'format' && e.params.format === 'email') return `${field} must be a valid email address`;
  if (e.keyword === 'maxLength') return `${field} must be at most ${String(e.params.limit)} characters`;
  if (e.keyword === 'minLength') {
    return e.params.limit === 1
      ? `${field} must not be empty`
      : `${field} must be at least ${String(e.params.limit)} characters`;
  }
  return `${field} ${e.message ?? 'is invalid'}`;
}

/** Maps any error to the status and client-safe reason it answers with; `internal` ones are logged. */
export function classifyError(error: unknown): { status: number; reason: string; internal: boolean } {
  if (error instanceof HttpError) return { status: error.statusCode, reason: error.reason, internal: false };
  const fe = error as Partial<FastifyError> & { validation?: AjvError[] };
  if (fe.validation) {
    return { status: 400, reason: validationReason(fe.validation, fe.validationContext), internal: false };
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, reason: 'Content-Type must be application/json', internal: false };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, reason: 'request body is too large', internal: false };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, reason: 'body is not valid JSON', internal: false };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, reason: 'Content-Length does not match the body', internal: false };
    // The router's own errors: Fastify's wording quotes the whole URL, api_key included, so never reuse it.
    case 'FST_ERR_BAD_URL':
      return { status: 400, reason: 'the path is not valid percent-encoded UTF-8', internal: false };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return {
        status: 414,
        reason: `a path segment is longer than ${MAX_PATH_PARAM_LENGTH} characters`,
        internal: false,
      };
  }
  if (error instanceof SyntaxError && fe.statusCode === 400) {
    return { status: 400, reason: 'body is not valid JSON', internal: false };
  }
  if (isUnavailable(error)) {
    return { status: 503, reason: 'a backing service is unavailable, retry shortly', internal: true };
  }
  // Fastify's own client errors (bad headers, aborted bodies) keep their status, not their wording.
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode, reason: 'the request could not be processed', internal: false };
  }
  return { status: 500, reason: 'unexpected error', internal: true };
}
