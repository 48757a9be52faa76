import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Rendered, serializeRequestMeta } from '../records/rendered.view.js';

/**
 * Whether an If-None-Match header names the current tag (RFC 9110 13.1.2: `*` or a list of tags,
 * compared weakly, so `W/"x"` matches `"x"`).
 */
export function ifNoneMatchHits(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const value = Array.isArray(header) ? header.join(',') : header;
  if (value.trim() === '*') return true;
  for (const part of value.split(',')) {
    const tag = part.trim().replace(/^W\//, '');
    if (tag === etag) return true;
  }
  return false;
}

/**
 * Answers a metered single-record read: 304 with no body (and no credit) when the client already has
 * this version, else the 200 `{<field>: <record>, request}`, its credit settled last. Both carry the
 * ETag. The body is written from the record's rendered JSON, so nothing is serialized twice.
 */
export async function sendRendered(
  request: FastifyRequest,
  reply: FastifyReply,
  field: 'org' | 'location' | 'locations',
  record: Rendered,
): Promise<FastifyReply> {
  reply.header('etag', record.etag);
  if (ifNoneMatchHits(request.headers['if-none-match'], record.etag)) {
    await request.notModified();
    return reply.code(304).send();
  }
  const meta = serializeRequestMeta(await request.settleCredit());
  return reply.type('application/json; charset=utf-8').send(`{"${field}":${record.json},"request":${meta}}`);
}
