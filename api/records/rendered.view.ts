import { createHash } from 'node:crypto';
import fastJson from 'fast-json-stringify';
import type { Static } from 'typebox';
import { RequestMetaSchema } from '../http/common.schema.js';
import { LocationSchema, LocationsListSchema } from '../locations/location.schema.js';
import { OrgSchema } from '../orgs/org.schema.js';
import type { OrgView } from '../orgs/org.view.js';

/**
 * A record as it is sent: its JSON text (serialized by the route's own response schema, so the
 * bytes are those Fastify would write) and its strong ETag, a hash of exactly that text. The tag
 * therefore changes exactly when the body apart from `request` changes, whatever changed it.
 */
export interface Rendered {
  json: string;
  etag: string;
}

export function rendered(json: string): Rendered {
  return { json, etag: `"${createHash('sha256').update(json).digest('base64url').slice(0, 32)}"` };
}

// Compiled once from the schemas the OpenAPI document shows (fast-json-stringify, as Fastify does).
export const serializeOrg = fastJson(OrgSchema as object) as (org: OrgView) => string;
export const serializeLocation = fastJson(LocationSchema as object) as (
  location: Static<typeof LocationSchema>,
) => string;
export const serializeLocationsList = fastJson(LocationsListSchema as object) as (
  list: Static<typeof LocationsListSchema>,
) => string;
export const serializeRequestMeta = fastJson(RequestMetaSchema as object) as (
  meta: Static<typeof RequestMetaSchema>,
) => string;
