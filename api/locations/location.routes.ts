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
import { LocationSchema } from './location.schema.js';

const noLocation = () => notFound('No Location exists for this domain');

export const locationRoutes: FastifyPluginAsync = async (root) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const suffix = app.config.domainSuffix;

  app.get(
    '/v1/location/:domain',
    {
      config: { metered: true, conditional: true },
      schema: {
        tags: ['locations'],
        summary: 'One Location by stable or public domain',
        description: CONDITIONAL_READ,
        security: [{ http_api_key: [] }],
        params: DomainParams,
        querystring: Type.Object(ApiKeyQuery),
        response: {
          200: withEtag(Type.Object({ location: LocationSchema, request: RequestMetaSchema })),
          304: NotModifiedSchema,
          ...meteredErrors,
        },
      },
    },
    async (request, reply) => {
      const ref = parseDomain(request.params.domain, suffix);
      if (ref?.kind !== 'location' && ref?.kind !== 'location-public') throw noLocation();
      const location = await app.records.location(ref);
      if (!location) throw noLocation();
      return sendRendered(request, reply, 'location', location);
    },
  );
};
