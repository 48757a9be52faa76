import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import Type from 'typebox';
import { parseDomain } from '../../shared/domains.js';
import { notFound } from '../../shared/errors.js';
import {
  ApiKeyQuery,
  CONDITIONAL_READ,
  DomainParams,
  meteredErrors,
  NotModifiedSchema,
  RequestMetaSchema,
  withEtag,
} from '../http/common.schema.js';
import { sendRendered } from '../http/conditional.js';
import { checkWindow, PaginationQuery } from '../http/pagination.js';
import { LocationsListSchema } from '../locations/location.schema.js';
import type { OrgRef } from './org.read-model.js';
import { OrgSchema } from './org.schema.js';

const noOrg = () => notFound('No Org exists for this domain');

function orgRef(domain: string, suffix: string): OrgRef {
  const ref = parseDomain(domain, suffix);
  if (ref?.kind !== 'org' && ref?.kind !== 'org-public') throw noOrg();
  return ref;
}

export const orgRoutes: FastifyPluginAsync = async (root) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const suffix = app.config.domainSuffix;

  app.get(
    '/v1/org/:domain',
    {
      config: { metered: true, conditional: true },
      schema: {
        tags: ['orgs'],
        summary: 'One Org by stable or public domain',
        description: CONDITIONAL_READ,
        security: [{ http_api_key: [] }],
        params: DomainParams,
        querystring: Type.Object(ApiKeyQuery),
        response: {
          200: withEtag(Type.Object({ org: OrgSchema, request: RequestMetaSchema })),
          304: NotModifiedSchema,
          ...meteredErrors,
        },
      },
    },
    async (request, reply) => {
      const org = await app.records.org(orgRef(request.params.domain, suffix));
      if (!org) throw noOrg();
      return sendRendered(request, reply, 'org', org);
    },
  );

  app.get(
    '/v1/org/:domain/locations',
    {
      config: { metered: true, conditional: true },
      schema: {
        tags: ['orgs'],
        summary: "An Org's Locations: the default first, then by name, then by domain",
        description: CONDITIONAL_READ,
        security: [{ http_api_key: [] }],
        params: DomainParams,
        querystring: Type.Object({ ...ApiKeyQuery, ...PaginationQuery }),
        response: {
          200: withEtag(Type.Object({ locations: LocationsListSchema, request: RequestMetaSchema })),
          304: NotModifiedSchema,
          ...meteredErrors,
        },
      },
    },
    async (request, reply) => {
      const { limit, offset } = request.query;
      checkWindow(limit, offset);
      const page = await app.records.orgLocations(orgRef(request.params.domain, suffix), limit, offset);
      if (!page) throw noOrg();
      return sendRendered(request, reply, 'locations', page);
    },
  );
};
