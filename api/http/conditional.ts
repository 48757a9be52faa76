import type { FastifyReply, FastifyRequest } from 'fastify';
import Type, { type TProperties, type TSchema } from 'typebox';
import { type Rendered, serializeRequestMeta } from '../records/rendered.view.js';
import {
  ApiKeyQuery,
  CONDITIONAL_READ,
  DomainParams,
  meteredErrors,
  NotModifiedSchema,
  RequestMetaSchema,
  withEtag,
} from './common.schema.js';

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
  field: 'org' | 'location' | 'locations' | 'orgs',
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

/**
 * The options of a metered conditional read `GET …/:domain` answered by sendRendered: the 200
 * `{<field>: <body>, request}` with its ETag, the free 304, the metered errors, and `query` beside
 * the api_key.
 */
export function conditionalRead<
  F extends 'org' | 'location' | 'locations',
  B extends TSchema,
  Q extends TProperties,
>(doc: { tag: string; summary: string }, field: F, body: B, query: Q) {
  return {
    config: { metered: true, conditional: true },
    schema: {
      tags: [doc.tag],
      summary: doc.summary,
      description: CONDITIONAL_READ,
      security: [{ http_api_key: [] }],
      params: DomainParams,
      querystring: Type.Object({ ...ApiKeyQuery, ...query }),
      response: {
        200: withEtag(
          Type.Object({ [field]: body, request: RequestMetaSchema } as { [K in F]: B } & {
            request: typeof RequestMetaSchema;
          }),
        ),
        304: NotModifiedSchema,
        ...meteredErrors,
      },
    },
  };
}
