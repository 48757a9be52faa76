import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import Type from 'typebox';
import type { HostResolver } from '../../webhooks/address-guard.js';
import { listAttempts } from '../../webhooks/delivery.repository.js';
import type { EventFeed } from '../../webhooks/event-feed.js';
import { createEventFeed } from '../../webhooks/feed.read-model.js';
import { ApiKeyQuery, ErrorSchema, meteredErrors } from '../http/common.schema.js';
import {
  CreateEndpointBody,
  DeletedAnswer,
  DeliveriesAnswer,
  DeliveriesQuery,
  EndpointAnswer,
  EndpointIdParams,
  EndpointListAnswer,
  EndpointWithSecretAnswer,
  ReplayBody,
} from './webhook.schema.js';
import { attemptView, endpointView } from './webhook.view.js';
import { listEndpoints } from './webhook-endpoint.repository.js';
import {
  createEndpoint,
  type EndpointDeps,
  getEndpoint,
  ownEndpointId,
  removeEndpoint,
  replayEndpoint,
  rotateEndpointSecret,
} from './webhook-endpoint.service.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** How the API resolves receiver host names (tests inject one: there is no DNS where they run). */
    receiverResolver: HostResolver;
    /** The events feed webhooks read (tests may inject one); null: the events read model. */
    injectedEventFeed: EventFeed | null;
  }
}

const TAG = 'webhooks';
const BASE = '/v1/webhook_endpoints';
const security = [{ http_api_key: [] }];
const query = Type.Object(ApiKeyQuery);

/**
 * `/v1/webhook_endpoints`: an account's webhook endpoints, managed with its key (docs/events.md, Webhooks).
 * Every answer is metered like any other route; another account's endpoint is 404.
 */
export const webhookRoutes: FastifyPluginAsync = async (root) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const deps: EndpointDeps = {
    db: app.db,
    feed: app.injectedEventFeed ?? createEventFeed(app.db, app.config.domainSuffix),
    allowPrivate: app.config.webhooksAllowPrivate,
    maxEndpoints: app.config.webhooksMaxEndpoints,
    resolve: app.receiverResolver,
    now: app.clock,
  };
  const accountOf = (request: { principal: { accountId: number } | null }) => request.principal!.accountId;

  app.post(
    BASE,
    {
      config: { metered: true },
      bodyLimit: 16 * 1024,
      schema: {
        tags: [TAG],
        summary: 'Create a webhook endpoint; its signing secret is in this answer only',
        security,
        querystring: query,
        body: CreateEndpointBody,
        response: { 200: EndpointWithSecretAnswer, ...meteredErrors, 413: ErrorSchema, 415: ErrorSchema },
      },
    },
    async (request) => {
      const { url, types, batch } = request.body;
      // Validated first (a bad URL is a 400 that writes nothing), created once the credit is held.
      await request.creditReserved();
      const created = await createEndpoint(deps, accountOf(request), { url, types, batch });
      return {
        ...endpointView(created.endpoint, app.clock()),
        secret: created.secret,
        request: await request.settleCredit(),
      };
    },
  );

  app.get(
    BASE,
    {
      config: { metered: true },
      schema: {
        tags: [TAG],
        summary: "The account's webhook endpoints, oldest first",
        security,
        querystring: query,
        response: { 200: EndpointListAnswer, ...meteredErrors },
      },
    },
    async (request) => {
      const rows = await listEndpoints(app.db, accountOf(request));
      const now = app.clock();
      return { endpoints: rows.map((r) => endpointView(r, now)), request: await request.settleCredit() };
    },
  );

  app.get(
    `${BASE}/:id`,
    {
      config: { metered: true },
      schema: {
        tags: [TAG],
        summary: 'One webhook endpoint, with its delivery status',
        security,
        params: EndpointIdParams,
        querystring: query,
        response: { 200: EndpointAnswer, ...meteredErrors },
      },
    },
    async (request) => {
      const id = await ownEndpointId(app.db, accountOf(request), request.params.id);
      const row = await getEndpoint(app.db, id);
      return { ...endpointView(row, app.clock()), request: await request.settleCredit() };
    },
  );

  app.delete(
    `${BASE}/:id`,
    {
      config: { metered: true },
      schema: {
        tags: [TAG],
        summary: 'Delete a webhook endpoint: nothing more is sent to it',
        security,
        params: EndpointIdParams,
        querystring: query,
        response: { 200: DeletedAnswer, ...meteredErrors },
      },
    },
    async (request) => {
      const id = await ownEndpointId(app.db, accountOf(request), request.params.id);
      await request.creditReserved();
      await removeEndpoint(app.db, id);
      return { id: request.params.id.trim(), deleted: true, request: await request.settleCredit() };
    },
  );

  app.post(
    `${BASE}/:id/rotate_secret`,
    {
      config: { metered: true },
      schema: {
        tags: [TAG],
        summary: 'A new signing secret (in this answer only); the previous one also signs for 24 hours',
        security,
        params: EndpointIdParams,
        querystring: query,
        response: { 200: EndpointWithSecretAnswer, ...meteredErrors, 415: ErrorSchema },
      },
    },
    async (request) => {
      const id = await ownEndpointId(app.db, accountOf(request), request.params.id);
      await request.creditReserved();
      const rotated = await rotateEndpointSecret(deps, id);
      return {
        ...endpointView(rotated.endpoint, app.clock()),
        secret: rotated.secret,
        request: await request.settleCredit(),
      };
    },
  );

  app.post(
    `${BASE}/:id/replay`,
    {
      config: { metered: true },
      bodyLimit: 4 * 1024,
      schema: {
        tags: [TAG],
        summary:
          'Send a range of events again, in order: after an event id or from a time, up to a time or the end',
        security,
        params: EndpointIdParams,
        querystring: query,
        body: ReplayBody,
        response: {
          200: EndpointAnswer,
          ...meteredErrors,
          409: ErrorSchema,
          410: ErrorSchema,
          413: ErrorSchema,
          415: ErrorSchema,
        },
      },
    },
    async (request) => {
      const id = await ownEndpointId(app.db, accountOf(request), request.params.id);
      const { after, from, to } = request.body;
      await request.creditReserved();
      const row = await replayEndpoint(deps, id, {
        ...(after !== undefined ? { after } : {}),
        ...(from !== undefined ? { from: new Date(from) } : {}),
        ...(to !== undefined ? { to: new Date(to) } : {}),
      });
      return { ...endpointView(row, app.clock()), request: await request.settleCredit() };
    },
  );

  app.get(
    `${BASE}/:id/deliveries`,
    {
      config: { metered: true },
      schema: {
        tags: [TAG],
        summary: 'The latest requests made to an endpoint: events, answer, duration, next try',
        security,
        params: EndpointIdParams,
        querystring: Type.Object({ ...ApiKeyQuery, ...DeliveriesQuery.properties }),
        response: { 200: DeliveriesAnswer, ...meteredErrors },
      },
    },
    async (request) => {
      const id = await ownEndpointId(app.db, accountOf(request), request.params.id);
      const rows = await listAttempts(app.db, id, request.query.limit);
      return { deliveries: rows.map(attemptView), request: await request.settleCredit() };
    },
  );
};
