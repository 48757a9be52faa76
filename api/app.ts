import { randomUUID } from 'node:crypto';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyPluginAsync,
  LogController,
} from 'fastify';
import type { Config } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import { type HostResolver, systemResolver } from '../webhooks/address-guard.js';
import type { EventFeed } from '../webhooks/event-feed.js';
import { contactRoutes } from './contacts/contact.routes.js';
import { creditsPlugin } from './credits/credits.plugin.js';
import { usageRoutes } from './credits/usage.routes.js';
import { eventRoutes } from './events/events.routes.js';
import { MAX_PATH_PARAM_LENGTH } from './http/error-mapping.js';
import {
  answerUnmetExpectation,
  clientErrorHandler,
  errorsPlugin,
  frameworkErrorHandler,
} from './http/errors.plugin.js';
import { infraPlugin } from './http/infra.plugin.js';
import { swaggerPlugin } from './http/swagger.plugin.js';
import { validatorCompiler } from './http/validation.js';
import { locationRoutes } from './locations/location.routes.js';
import { healthRoutes } from './ops/health.routes.js';
import { opsPlugin } from './ops/ops.plugin.js';
import { orgRoutes } from './orgs/org.routes.js';
import { recordsPlugin } from './records/records.plugin.js';
import { searchRoutes } from './search/search.routes.js';
import { webhookRoutes } from './webhooks/webhook.routes.js';

/**
 * Every route plugin of the API, registered in this order by buildApp. To add routes (search), write
 * `api/<feature>/<name>.routes.ts` exporting a FastifyPluginAsync and add it here. A route with
 * `config: { metered: true }` needs an api_key and must end its 200 with `request: await
 * request.settleCredit()` (a route that writes calls `await request.creditReserved()` first); give it
 * a schema for params, querystring and every response status.
 */
const ROUTE_PLUGINS: readonly FastifyPluginAsync[] = [
  healthRoutes,
  searchRoutes,
  orgRoutes,
  locationRoutes,
  contactRoutes,
  usageRoutes,
  eventRoutes,
  webhookRoutes,
];

export interface AppDeps {
  config: Config;
  /** Logs through this pino logger; none: silent. */
  logger?: Logger;
  /** Current time for credit periods (tests move it across a period boundary). */
  clock?: () => Date;
  /** How long a process trusts a key's plan before reading it again (revocation is immediate anyway). */
  keyCacheTtlMs?: number;
  /** How webhook receivers' host names are resolved; default the system resolver (tests: their own). */
  resolveHost?: HostResolver;
  /** The events feed webhooks read; default the events read model (tests may give their own). */
  eventFeed?: EventFeed;
}

/** The API, assembled from plugins; `bizdir serve` and the tests both build it here. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger as FastifyBaseLogger } : { logger: false }),
    // Ids are ours (also the `request.id` of the body), never taken from a client header.
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    forceCloseConnections: 'idle',
    // Fastify's request log lines carry the URL, and with it the api_key; ours below do not.
    logController: new LogController({ disableRequestLogging: true }),
    // No implicit HEAD twins: a HEAD would pass auth and spend a credit on a body nobody receives.
    exposeHeadRoutes: false,
    // `/v1/org/search/` is `/v1/org/search`: one trailing slash never turns a route into a 404 or 405.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH, ignoreTrailingSlash: true },
    // Errors raised before the error handler can see them, answered in our `{code, message}` shape
    // (Fastify's own bodies echo the URL, api_key included): router errors, HTTP parser errors, and
    // requests arriving while the server closes (errors.plugin.ts answers those).
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    return503OnClosing: false,
    // A request without Host is refused by errors.plugin.ts in our shape (Node's own 400 has no body).
    http: { requireHostHeader: false },
  });
  app.server.on('checkExpectation', answerUnmetExpectation);
  app.setValidatorCompiler(validatorCompiler());
  // JSON only (docs/decisions.md, Contacts): text bodies get 415 instead of being parsed as strings.
  app.removeContentTypeParser('text/plain');

  await app.register(errorsPlugin);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url,
        status: reply.statusCode,
        ms: reply.elapsedTime,
      },
      'request',
    );
  });
  await app.register(swaggerPlugin);
  await app.register(infraPlugin, { config: deps.config, clock: deps.clock ?? (() => new Date()) });
  // Operations: its request-metrics hook covers every route registered after it (so it comes before
  // the routes); with ADMIN_TOKEN set, also /metrics and the /admin/queues dashboard.
  await app.register(opsPlugin);
  await app.register(creditsPlugin, {
    ...(deps.keyCacheTtlMs !== undefined ? { keyCacheTtlMs: deps.keyCacheTtlMs } : {}),
  });
  await app.register(recordsPlugin);
  app.decorate('receiverResolver', deps.resolveHost ?? systemResolver);
  app.decorate('injectedEventFeed', deps.eventFeed ?? null);
  for (const routes of ROUTE_PLUGINS) await app.register(routes);
  return app;
}
