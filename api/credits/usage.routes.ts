import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import Type from 'typebox';
import { HttpError } from '../../shared/errors.js';
import { ApiKeyQuery, ErrorSchema, Nullable, RequestMetaSchema } from '../http/common.schema.js';
import { requestMeta } from './credits.plugin.js';

const RateLimitSchema = Type.Object(
  {
    limit: Nullable(Type.Integer({ description: 'Requests allowed per window; null: no rate limit.' })),
    window_seconds: Nullable(Type.Integer({ description: 'Length of a window in seconds.' })),
    remaining: Nullable(Type.Integer({ description: 'Requests left in the current window.' })),
    reset: Nullable(
      Type.Integer({
        description: 'Seconds until the current window ends and `remaining` is `limit` again.',
      }),
    ),
  },
  { title: 'RateLimit' },
);

/**
 * GET /v1/usage: where the key's account stands, for free. Never charged, never counted in
 * `requests_this_period` or against the rate limit, and answered when the period's credits are spent
 * (that is when consumers ask). Not `metered`: `authenticated` only.
 */
export const usageRoutes: FastifyPluginAsync = async (root) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/v1/usage',
    {
      // The key is checked before the query (credits.plugin.ts): a bad key is 403, never a 400.
      config: { authenticated: true },
      schema: {
        tags: ['account'],
        summary: "The key's data-credit usage and rate limit (free)",
        description:
          'The `request` object as a 200 of any other operation would carry it, with ' +
          '`credit_used_this_request` 0 (this call uses no credit and is not counted), and the ' +
          "account's rate limit: the same numbers as the RateLimit-* headers. Answered also when the " +
          "period's credits are spent; it does not count against the rate limit.",
        security: [{ http_api_key: [] }],
        querystring: Type.Object(ApiKeyQuery),
        response: {
          200: Type.Object({ request: RequestMetaSchema, rate_limit: RateLimitSchema }),
          400: ErrorSchema,
          403: ErrorSchema,
          500: ErrorSchema,
          503: ErrorSchema,
        },
      },
    },
    async (request, reply) => {
      const principal = request.principal;
      if (!principal) throw new HttpError(403, 'Invalid api_key parameter value');
      const usage = await app.credits.peek(principal);
      const rl = usage.rateLimit;
      request.rateLimit = rl;
      return reply.send({
        request: requestMeta(request.id, usage, 0),
        rate_limit: {
          limit: rl?.limit ?? null,
          window_seconds: rl?.windowSeconds ?? null,
          remaining: rl?.remaining ?? null,
          reset: rl?.resetSeconds ?? null,
        },
      });
    },
  );
};
