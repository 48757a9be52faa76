import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import Type from 'typebox';
import { orgDomain, parseDomain } from '../../shared/domains.js';
import { notFound } from '../../shared/errors.js';
import { findLocationByRef } from '../read-models/location.read-model.js';
import { ApiKeyQuery, DomainParams, meteredErrors, RequestMetaSchema } from '../schemas/common.schema.js';
import { LocationSchema } from '../schemas/location.schema.js';
import { toLocationView } from '../views/location.view.js';

const noLocation = () => notFound('No Location exists for this domain');

export const locationRoutes: FastifyPluginAsync = async (root) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const suffix = app.config.domainSuffix;

  app.get(
    '/v1/location/:domain',
    {
      config: { metered: true },
      schema: {
        tags: ['locations'],
        summary: 'One Location by stable or public domain',
        security: [{ http_api_key: [] }],
        params: DomainParams,
        querystring: Type.Object(ApiKeyQuery),
        response: {
          200: Type.Object({ location: LocationSchema, request: RequestMetaSchema }),
          ...meteredErrors,
        },
      },
    },
    async (request) => {
      const ref = parseDomain(request.params.domain, suffix);
      if (ref?.kind !== 'location' && ref?.kind !== 'location-public') throw noLocation();
      const row = await findLocationByRef(app.db, ref);
      if (!row) throw noLocation();
      const org = orgDomain(row.org_uid, row.org_domain_cc, suffix);
      return {
        location: toLocationView(row, row.address, org, suffix),
        request: await request.settleCredit(),
      };
    },
  );
};
