import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Static } from 'typebox';
import { HttpError } from '../../shared/errors.js';
import { accountPublicId, subscriptionPublicId } from '../accounts/public-ids.js';
import type { RequestMetaSchema } from '../http/common.schema.js';
import type { KeyPrincipal } from './api-key.repository.js';
import {
  type CreditsService,
  type RateLimitState,
  type Reservation,
  rateLimitOf,
  CreditsService as Service,
  type Usage,
} from './credits.service.js';
import { KeyAuthenticator } from './key-authenticator.js';
import { counterPrefix, RedisCounters } from './redis-counters.js';
import { UsageWriter } from './usage-writer.js';

export type RequestMeta = Static<typeof RequestMetaSchema>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Needs an `api_key` and costs one data credit when it answers 200. */
    metered?: boolean;
    /** Needs an `api_key` but is free (GET /v1/usage): the key is checked before anything else. */
    authenticated?: boolean;
    /**
     * Answers If-None-Match with a free 304 (sendRendered): a request carrying one takes no credit
     * up front, only once it is known to answer 200.
     */
    conditional?: boolean;
    /**
     * Some of its 200s cost nothing (an empty page of GET /v1/events): no credit is held while the
     * request runs; the handler ends a 200 that costs a credit with settleCredit() (which takes it,
     * 402 if the period is spent) and a free one with settleFree().
     */
    mayBeFree?: boolean;
  }
  interface FastifyReply {
    /** Sets RateLimit-Limit, -Remaining, -Reset (and Retry-After on a 429) from a window. */
    rateLimitHeaders(state: RateLimitState | null): FastifyReply;
  }
  interface FastifyInstance {
    credits: CreditsService;
    apiKeys: KeyAuthenticator;
  }
  interface FastifyRequest {
    principal: KeyPrincipal | null;
    /** The credit being reserved for this request, started before the handler runs (see below). */
    reservation: Promise<Reservation> | null;
    /** The rate-limit window this request was counted in, once known (null: no limit). */
    rateLimit: RateLimitState | null;
    /**
     * Commits this request's credit and returns the `request` object for its 200 body. Call it last,
     * once the answer is known to be a 200: any error after it would still cost the credit.
     */
    settleCredit(): Promise<RequestMeta>;
    /**
     * A 200 that costs nothing, on a route with `mayBeFree`: waits for the key and rate-limit checks
     * and returns the `request` object with credit_used_this_request 0 (the ledger's count as it stands).
     */
    settleFree(): Promise<RequestMeta>;
    /** Waits until the credit is held (402/403 otherwise): call it before a handler writes anything. */
    creditReserved(): Promise<void>;
    /**
     * For a 304: waits for the key and rate-limit checks (403, 429 and 503 still win) but not for a
     * credit, which a 304 does not use; the held credit, if any, is given back when the answer ends.
     */
    notModified(): Promise<void>;
  }
}

/** The `request` object of a 200 (or of GET /v1/usage, which uses no credit). */
export function requestMeta(id: string, usage: Usage, creditUsedThisRequest: 0 | 1): RequestMeta {
  const { period, used, principal } = usage;
  return {
    id,
    success: true,
    period_start: period.start.toISOString(),
    next_period_start: period.next.toISOString(),
    requests_this_period: used,
    credit_available_this_period: principal.credits,
    credit_used_this_request: creditUsedThisRequest,
    credit_used_this_period: used,
    credit_remaining_this_period: Math.max(0, principal.credits - used),
    account_id: accountPublicId(principal.accountUid),
    subscription_id: subscriptionPublicId(principal.subscriptionUid),
  };
}

export interface CreditsPluginOptions {
  keyCacheTtlMs?: number;
}

/**
 * Auth and data credits for routes with `config: { metered: true }`: the key is checked on request
 * (403 before anything else), a credit is reserved once the request is valid (402 when the period is
 * spent), the handler settles it into the ledger, and a request that ends any other way gets it back.
 * Routes must be registered after this plugin (its onRoute hook wraps their handlers).
 */
export const creditsPlugin = fp<CreditsPluginOptions>(
  async (app, opts) => {
    const writer = new UsageWriter(app.db);
    const counters = new RedisCounters(app.redis, counterPrefix(app.config.queuePrefix));
    app.decorate('credits', new Service(app.db, counters, writer, app.clock));
    app.decorate('apiKeys', new KeyAuthenticator(app.db, opts.keyCacheTtlMs));
    app.decorateRequest('principal', null);
    app.decorateRequest('reservation', null);
    app.decorateRequest('creditReserved', async function creditReserved(this: FastifyRequest) {
      if (!this.reservation) throw new Error('creditReserved called on a route that is not metered');
      await this.reservation;
    });
    app.decorateRequest('notModified', async function notModified(this: FastifyRequest) {
      if (!this.reservation) throw new Error('notModified called on a route that is not metered');
      try {
        await this.reservation;
      } catch (error) {
        if (!(error instanceof HttpError && error.statusCode === 402)) throw error;
      }
    });
    app.decorateRequest('settleCredit', async function settleCredit(this: FastifyRequest) {
      if (!this.reservation) throw new Error('settleCredit called on a route that is not metered');
      return requestMeta(this.id, await app.credits.settle(await this.reservation), 1);
    });
    app.decorateRequest('settleFree', async function settleFree(this: FastifyRequest) {
      if (!this.reservation || !this.routeOptions.config.mayBeFree)
        throw new Error('settleFree called on a route that is not metered with mayBeFree');
      return requestMeta(this.id, await app.credits.current(await this.reservation), 0);
    });
    app.decorateRequest('rateLimit', null);
    app.decorateReply('rateLimitHeaders', function rateLimitHeaders(this, state: RateLimitState | null) {
      if (!state) return this;
      // The IETF draft names, as @fastify/rate-limit sends them with enableDraftSpec.
      this.header('ratelimit-limit', state.limit);
      this.header('ratelimit-remaining', state.remaining);
      this.header('ratelimit-reset', state.resetSeconds);
      if (this.statusCode === 429) this.header('retry-after', state.resetSeconds);
      return this;
    });

    // The key first: a missing, unknown or revoked key is 403 whatever else is wrong with the request.
    // Then, on a metered route, the reservation (one Redis round trip: key liveness, rate limit,
    // credit), started here and left running while the body is read, the request validated and the
    // handler reads Postgres; the handler waits for it in settleCredit. Its outcome still comes first:
    // a request whose reservation fails gets that 402/403/429/503 whatever else failed (the error
    // handler, errors.plugin.ts, asks reservationFailure). Every request with a valid key is counted
    // against the rate limit, a 400/413/415 too, and a credit it does not use is given back.
    app.addHook('onRequest', async (request) => {
      const config = request.routeOptions.config;
      if (!config.metered && !config.authenticated) return;
      const query = request.query as Record<string, unknown> | undefined;
      const key = typeof query?.api_key === 'string' ? query.api_key : undefined;
      const principal = await app.apiKeys.authenticate(key);
      request.principal = principal;
      if (!config.metered) return;
      const mayBe304 = config.conditional === true && request.headers['if-none-match'] !== undefined;
      const task = app.credits.reserve(principal, !mayBe304 && config.mayBeFree !== true).then(
        (reservation) => {
          request.rateLimit = reservation.rateLimit;
          return reservation;
        },
        (error: unknown) => {
          request.rateLimit = rateLimitOf(error);
          throw error;
        },
      );
      task.catch((error: unknown) => {
        // A revoked key found out at reservation time: drop it from the process cache too.
        if (error instanceof HttpError && error.statusCode === 403) app.apiKeys.forget(principal.keyId);
      });
      request.reservation = task;
    });

    // Every answer of a request counted against a rate limit says where its window stands.
    app.addHook('onSend', async (request, reply, payload) => {
      // Only its end is waited for here (rateLimit is set either way): a failed reservation is the
      // answer being sent, put there by the error handler.
      if (request.reservation) await request.reservation.catch(() => undefined);
      reply.rateLimitHeaders(request.rateLimit);
      return payload;
    });

    app.addHook('onResponse', async (request) => {
      // A reservation that failed holds no credit to give back; the error handler answered with it.
      const reservation = await request.reservation?.catch(() => null);
      if (reservation && !reservation.settled) {
        await app.credits
          .release(reservation)
          .catch((err) => request.log.warn({ err }, 'credit refund failed'));
      }
    });

    app.addHook('onClose', async () => {
      await writer.flush();
    });
  },
  { name: 'bizdir-credits', dependencies: ['bizdir-infra'] },
);
