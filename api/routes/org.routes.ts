import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import Type from 'typebox';
import { orgDomain, parseDomain } from '../../shared/domains.js';
import { notFound } from '../../shared/errors.js';
import { countOrgLocations, listOrgLocations } from '../read-models/location.read-model.js';
import { findOrgByRef, findOrgIdByRef, type OrgRef } from '../read-models/org.read-model.js';
import { ApiKeyQuery, DomainParams, meteredErrors, RequestMetaSchema } from '../schemas/common.schema.js';
import { LocationsListSchema } from '../schemas/location.schema.js';
import { OrgSchema } from '../schemas/org.schema.js';
import { toLocationView } from '../views/location.view.js';
import { toOrgView } from '../views/org.view.js';
import { checkWindow, PaginationQuery } from './pagination.js';

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
      config: { metered: true },
      schema: {
        tags: ['orgs'],
        summary: 'One Org by stable or public domain',
        security: [{ http_api_key: [] }],
        params: DomainParams,
        querystring: Type.Object(ApiKeyQuery),
        response: { 200: Type.Object({ org: OrgSchema, request: RequestMetaSchema }), ...meteredErrors },
      },
    },
    async (request) => {
      const org = await findOrgByRef(app.db, orgRef(request.params.domain, suffix));
      if (!org) throw noOrg();
      return { org: toOrgView(org, suffix), request: await request.settleCredit() };
    },
  );

  app.get(
    '/v1/org/:domain/locations',
    {
      config: { metered: true },
      schema: {
        tags: ['orgs'],
        summary: "An Org's Locations: the default first, then by name, then by domain",
        security: [{ http_api_key: [] }],
        params: DomainParams,
        querystring: Type.Object({ ...ApiKeyQuery, ...PaginationQuery }),
        response: {
          200: Type.Object({ locations: LocationsListSchema, request: RequestMetaSchema }),
          ...meteredErrors,
        },
      },
    },
    async (request) => {
      const { limit, offset } = request.query;
      checkWindow(limit, offset);
      const org = await findOrgIdByRef(app.db, orgRef(request.params.domain, suffix));
      if (!org) throw noOrg();
      const [total, rows] = await Promise.all([
        countOrgLocations(app.db, org.id),
        listOrgLocations(app.db, org.id, limit, offset),
      ]);
      const domain = orgDomain(org.uid, org.domain_cc, suffix);
      return {
        locations: { total, results: rows.map((l) => toLocationView(l, l.address, domain, suffix)) },
        request: await request.settleCredit(),
      };
    },
  );
};
