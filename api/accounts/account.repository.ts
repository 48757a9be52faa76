import type { Transaction } from 'kysely';
import type { Db } from '../../shared/db.js';
import type { Database } from '../../shared/tables.js';

export interface CreatedAccount {
  accountId: number;
  accountUid: string;
  subscriptionId: number;
  subscriptionUid: string;
}

export interface RateLimitColumns {
  rate_limit_requests: number | null;
  rate_limit_seconds: number | null;
}

export async function insertAccount(trx: Transaction<Database>, name: string, rateLimit: RateLimitColumns) {
  return trx
    .insertInto('accounts')
    .values({ name, ...rateLimit })
    .returning(['id', 'uid'])
    .executeTakeFirstOrThrow();
}

export async function updateAccountRateLimit(
  trx: Transaction<Database>,
  id: number,
  rateLimit: RateLimitColumns,
) {
  await trx.updateTable('accounts').set(rateLimit).where('id', '=', id).execute();
}

export async function updateSubscriptionCredits(
  trx: Transaction<Database>,
  accountId: number,
  credits: number,
) {
  await trx.updateTable('subscriptions').set({ credits }).where('account_id', '=', accountId).execute();
}

/** Accounts with their plan, oldest first; `uid` narrows it to one. */
export async function listAccountPlans(db: Db, uid?: string) {
  let query = db
    .selectFrom('accounts as a')
    .innerJoin('subscriptions as s', 's.account_id', 'a.id')
    .select([
      'a.id',
      'a.uid',
      'a.name',
      'a.rate_limit_requests',
      'a.rate_limit_seconds',
      's.id as subscription_id',
      's.uid as subscription_uid',
      's.credits',
      's.anchor_date',
    ])
    .orderBy('a.id');
  if (uid !== undefined) query = query.where('a.uid', '=', uid);
  return query.execute();
}

/** Ledger counts of the given (subscription, period start) pairs. */
export async function usedInPeriods(db: Db, pairs: readonly { subscriptionId: number; periodStart: Date }[]) {
  if (pairs.length === 0) return [];
  return db
    .selectFrom('usage_periods')
    .select(['subscription_id', 'period_start', 'used'])
    .where((eb) =>
      eb.or(
        pairs.map((p) =>
          eb.and([eb('subscription_id', '=', p.subscriptionId), eb('period_start', '=', p.periodStart)]),
        ),
      ),
    )
    .execute();
}

/** Keys of the given accounts: prefix and status only (the secret is never stored). */
export async function listKeys(db: Db, accountIds: readonly number[]) {
  if (accountIds.length === 0) return [];
  return db
    .selectFrom('api_keys')
    .select(['account_id', 'prefix', 'created_at', 'revoked_at'])
    .where('account_id', 'in', [...accountIds])
    .orderBy('id')
    .execute();
}

export async function insertSubscription(
  trx: Transaction<Database>,
  accountId: number,
  credits: number,
  anchorDate: string,
) {
  return trx
    .insertInto('subscriptions')
    .values({ account_id: accountId, credits, anchor_date: anchorDate })
    .returning(['id', 'uid'])
    .executeTakeFirstOrThrow();
}

/** Accounts are named by their public id (`account_id` in the request object). */
export async function findAccountByUid(db: Db, uid: string) {
  return db.selectFrom('accounts').select(['id', 'uid', 'name']).where('uid', '=', uid).executeTakeFirst();
}
