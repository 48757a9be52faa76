import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Static } from 'typebox';
import { HttpError } from '../../shared/errors.js';
import { accountPublicId, subscriptionPublicId } from '../accounts/public-ids.js';
import {
  type CreditsService,
  type Reservation,
  CreditsService as Service,
} from '../credits/credits.service.js';
import { KeyAuthenticator } from '../credits/key-authenticator.js';
import { counterPrefix, RedisCounters } from '../credits/redis-counters.js';
import { UsageWriter } from '../credits/usage-writer.js';
import type { KeyPrincipal } from '../repositories/api-key.repository.js';
import type { RequestMetaSchema } from '../schemas/common.schema.js';

export type RequestMeta = Static<typeof RequestMetaSchema>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Needs an `api_key` and costs one data credit when it answers 200. */
    metered?: boolean;
  }
  interface FastifyInstance {
    credits: CreditsService;
    apiKeys: KeyAuthenticator;
  }
  interface FastifyRequest {
    principal: KeyPrincipal | null;
    reservation: Reservation | null;
    /**
     * Commits this request's credit and returns the `request` object for its 200 body. Call it last,
     * once the answer is known to be a 200: any error after it would still cost the credit.
     */
    settleCredit(): Promise<RequestMeta>;
  }
}

export interface CreditsPluginOptions {
  keyCacheTtlMs?: number;
}

/**
 * Auth and data credits for routes with `config: { metered: true }`: the key is checked on request
 * (403 before anything else), a credit is reserved once the request is valid (402 when the period is
 * spent), the handler settles it into the ledger, and a request that ends any other way gets it back.
 */
export const creditsPlugin = fp<CreditsPluginOptions>(
  async (app, opts) => {
    const writer = new UsageWriter(app.db);
    const counters = new RedisCounters(app.redis, counterPrefix(app.config.queuePrefix));
    app.decorate('credits', new Service(app.db, counters, writer, app.clock));
    app.decorate('apiKeys', new KeyAuthenticator(app.db, opts.keyCacheTtlMs));
    app.decorateRequest('principal', null);
    app.decorateRequest('reservation', null);
    app.decorateRequest('settleCredit', async function settleCredit(this: FastifyRequest) {
      if (!this.reservation) throw new Error('settleCredit called on a route that is not metered');
      const usage = await app.credits.settle(this.reservation);
      const { period, used, principal } = usage;
      return {
        id: this.id,
        success: true,
        period_start: period.start.toISOString(),
        next_period_start: period.next.toISOString(),
        requests_this_period: used,
        credit_available_this_period: principal.credits,
        credit_used_this_request: 1,
        credit_used_this_period: used,
        credit_remaining_this_period: Math.max(0, principal.credits - used),
        account_id: accountPublicId(principal.accountUid),
        subscription_id: subscriptionPublicId(principal.subscriptionUid),
      };
    });

    app.addHook('onRequest', async (request) => {
      if (!request.routeOptions.config.metered) return;
      const query = request.query as Record<string, unknown> | undefined;
      const key = typeof query?.api_key === 'string' ? query.api_key : undefined;
      request.principal = await app.apiKeys.authenticate(key);
    });

    app.addHook('preHandler', async (request) => {
      if (!request.routeOptions.config.metered) return;
      if (!request.principal) throw new HttpError(403, 'Invalid api_key parameter value');
      try {
        request.reservation = await app.credits.reserve(request.principal);
      } catch (error) {
        // A revoked key found out at reservation time: drop it from the process cache too.
        if (error instanceof HttpError && error.statusCode === 403)
          app.apiKeys.forget(request.principal.keyId);
        throw error;
      }
    });

    app.addHook('onResponse', async (request) => {
      if (request.reservation && !request.reservation.settled) {
        await app.credits
          .release(request.reservation)
          .catch((err) => request.log.warn({ err }, 'credit refund failed'));
      }
    });

    app.addHook('onClose', async () => {
      await writer.flush();
    });
  },
  { name: 'bizdir-credits', dependencies: ['bizdir-infra'] },
);
