import type { FastifyPluginAsync } from 'fastify';
import { contactRoutes } from './contact.routes.js';
import { healthRoutes } from './health.routes.js';
import { locationRoutes } from './location.routes.js';
import { orgRoutes } from './org.routes.js';
import { searchRoutes } from './search.routes.js';
import { usageRoutes } from './usage.routes.js';

/**
 * Every route plugin of the API, registered in this order by buildApp. To add routes (search), write
 * `api/routes/<name>.routes.ts` exporting a FastifyPluginAsync and add it here. A route with
 * `config: { metered: true }` needs an api_key and must end its 200 with `request: await
 * request.settleCredit()` (a route that writes calls `await request.creditReserved()` first); give it
 * a schema for params, querystring and every response status.
 */
export const ROUTE_PLUGINS: readonly FastifyPluginAsync[] = [
  healthRoutes,
  searchRoutes,
  orgRoutes,
  locationRoutes,
  contactRoutes,
  usageRoutes,
];
