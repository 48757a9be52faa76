import type { Redis } from 'ioredis';
import type { Db } from '../../shared/db.js';
import { generateApiKey } from '../credits/api-key.js';
import { insertApiKey, revokeKeyByPrefix } from '../credits/api-key.repository.js';
import { periodAt } from '../credits/period.js';
import { counterPrefix, type RateLimitRule } from '../credits/redis-counters.js';
import {
  findAccountByUid,
  insertAccount,
  insertSubscription,
  listAccountPlans,
  listKeys,
  type RateLimitColumns,
  updateAccountRateLimit,
  updateSubscriptionCredits,
  usedInPeriods,
} from './account.repository.js';
import { accountPublicId, accountUidOf, subscriptionPublicId } from './public-ids.js';

export interface NewAccount {
  account_id: string;
  subscription_id: string;
  api_key: string;
  key_prefix: string;
}

const rateLimitColumns = (rule: RateLimitRule | null | undefined): RateLimitColumns => ({
  rate_limit_requests: rule?.max ?? null,
  rate_limit_seconds: rule?.windowSeconds ?? null,
});

/** An account, its subscription and its first key, all or nothing. The key is only ever shown here. */
export async function createAccount(
  db: Db,
  input: { name: string; credits: number; anchorDate: string; rateLimit?: RateLimitRule | null },
): Promise<NewAccount> {
  return db.transaction().execute(async (trx) => {
    const account = await insertAccount(trx, input.name, rateLimitColumns(input.rateLimit));
    const subscription = await insertSubscription(trx, account.id, input.credits, input.anchorDate);
    const key = generateApiKey();
    await insertApiKey(trx, account.id, key.prefix, key.hash);
    return {
      account_id: accountPublicId(account.uid),
      subscription_id: subscriptionPublicId(subscription.uid),
      api_key: key.key,
      key_prefix: key.prefix,
    };
  });
}

export class UnknownAccountError extends Error {
  override name = 'UnknownAccountError';
}

export async function createKey(
  db: Db,
  accountId: string,
): Promise<{ account_id: string; api_key: string; key_prefix: string }> {
  const account = await findAccountByUid(db, accountUidOf(accountId));
  if (!account) throw new UnknownAccountError(`no account has id ${accountId}`);
  const key = generateApiKey();
  await insertApiKey(db, account.id, key.prefix, key.hash);
  return { account_id: accountPublicId(account.uid), api_key: key.key, key_prefix: key.prefix };
}

/**
 * Revokes a key in Postgres (the truth), then drops its liveness mark in Redis so running API
 * processes notice on the key's next request. Returns false when no live key has this prefix.
 * With Redis away the mark expires by itself within minutes; the caller is told.
 */
export async function revokeKey(
  db: Db,
  redis: Redis | null,
  queuePrefix: string,
  prefix: string,
  now = new Date(),
): Promise<{ revoked: boolean; redisNotified: boolean }> {
  const row = await revokeKeyByPrefix(db, prefix, now);
  if (!row) return { revoked: false, redisNotified: false };
  if (!redis) return { revoked: true, redisNotified: false };
  try {
    await redis.del(`${counterPrefix(queuePrefix)}:live:${row.id}`);
    return { revoked: true, redisNotified: true };
  } catch {
    return { revoked: true, redisNotified: false };
  }
}

/**
 * Changes an account's plan credits and/or rate limit (null: no limit). Running API processes see
 * the change within a minute (they cache a key's plan for 60 s).
 */
export async function updateAccount(
  db: Db,
  accountId: string,
  change: { credits?: number; rateLimit?: RateLimitRule | null },
): Promise<AccountOverview> {
  const account = await findAccountByUid(db, accountUidOf(accountId));
  if (!account) throw new UnknownAccountError(`no account has id ${accountId}`);
  await db.transaction().execute(async (trx) => {
    if (change.credits !== undefined) await updateSubscriptionCredits(trx, account.id, change.credits);
    if (change.rateLimit !== undefined)
      await updateAccountRateLimit(trx, account.id, rateLimitColumns(change.rateLimit));
  });
  const [overview] = await accountOverviews(db, new Date(), accountId);
  return overview!;
}

/** What an operator asks about an account: plan, current period, usage, rate limit and keys. */
export interface AccountOverview {
  account_id: string;
  name: string;
  subscription_id: string;
  credits_per_period: number;
  anchor_date: string;
  period_start: string;
  next_period_start: string;
  credits_used: number;
  credits_left: number;
  /** null: no rate limit. */
  rate_limit: { requests: number; seconds: number } | null;
  keys: { prefix: string; status: 'active' | 'revoked'; created_at: string; revoked_at: string | null }[];
}

/** Every account (oldest first), or the one named by `accountId` (none: an empty list). */
export async function accountOverviews(db: Db, now: Date, accountId?: string): Promise<AccountOverview[]> {
  const plans = await listAccountPlans(db, accountId === undefined ? undefined : accountUidOf(accountId));
  const periods = plans.map((p) => periodAt(p.anchor_date, now));
  const [ledger, keys] = await Promise.all([
    usedInPeriods(
      db,
      plans.map((p, i) => ({ subscriptionId: p.subscription_id, periodStart: periods[i]!.start })),
    ),
    listKeys(
      db,
      plans.map((p) => p.id),
    ),
  ]);
  const usedOf = new Map(
    ledger.map((l) => [`${l.subscription_id}:${new Date(l.period_start).getTime()}`, l.used]),
  );
  return plans.map((p, i) => {
    const period = periods[i]!;
    const used = usedOf.get(`${p.subscription_id}:${period.start.getTime()}`) ?? 0;
    return {
      account_id: accountPublicId(p.uid),
      name: p.name,
      subscription_id: subscriptionPublicId(p.subscription_uid),
      credits_per_period: p.credits,
      anchor_date: p.anchor_date,
      period_start: period.start.toISOString(),
      next_period_start: period.next.toISOString(),
      credits_used: used,
      credits_left: Math.max(0, p.credits - used),
      rate_limit:
        p.rate_limit_requests && p.rate_limit_seconds
          ? { requests: p.rate_limit_requests, seconds: p.rate_limit_seconds }
          : null,
      keys: keys
        .filter((k) => k.account_id === p.id)
        .map((k) => ({
          prefix: k.prefix,
          status: k.revoked_at ? ('revoked' as const) : ('active' as const),
          created_at: new Date(k.created_at).toISOString(),
          revoked_at: k.revoked_at ? new Date(k.revoked_at).toISOString() : null,
        })),
    };
  });
}
