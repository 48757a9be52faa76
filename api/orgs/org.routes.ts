import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { parseDomain } from '../../shared/domains.js';
import { notFound } from '../../shared/errors.js';
import type { OrgDomainRef } from '../../shared/org-domains.read-model.js';
import { conditionalRead, sendRendered } from '../http/conditional.js';
import { checkWindow, PaginationQuery } from '../http/pagination.js';
import { LocationsListSchema } from '../locations/location.schema.js';
import { OrgSchema } from './org.schema.js';

const noOrg = () => notFound('No Org exists for this domain');

function orgRef(domain: string, suffix: string): OrgDomainRef {
  const ref = parseDomain(domain, suffix);
  if (ref?.kind !== 'org' && ref?.kind !== 'org-public') throw noOrg();
  return ref;
}

export const orgRoutes: FastifyPluginAsync = async (root) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const suffix = app.config.domainSuffix;

  app.get(
    '/v1/org/:domain',
    conditionalRead({ tag: 'orgs', summary: 'One Org by stable or public domain' }, 'org', OrgSchema, {}),
    async (request, reply) => {
      const org = await app.records.org(orgRef(request.params.domain, suffix));
      if (!org) throw noOrg();
      return sendRendered(request, reply, 'org', org);
    },
  );

  app.get(
    '/v1/org/:domain/locations',
    conditionalRead(
      { tag: 'orgs', summary: "An Org's Locations: the default first, then by name, then by domain" },
      'locations',
      LocationsListSchema,
      PaginationQuery,
    ),
    async (request, reply) => {
      const { limit, offset } = request.query;
      checkWindow(limit, offset);
      const page = await app.records.orgLocations(orgRef(request.params.domain, suffix), limit, offset);
      if (!page) throw noOrg();
      return sendRendered(request, reply, 'locations', page);
    },
  );
};
