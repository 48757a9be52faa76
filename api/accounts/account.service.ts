import type { Redis } from 'ioredis';
import type { Db } from '../../shared/db.js';
import { generateApiKey } from '../credits/api-key.js';
import { counterPrefix } from '../credits/redis-counters.js';
import { findAccountByUid, insertAccount, insertSubscription } from '../repositories/account.repository.js';
import { insertApiKey, revokeKeyByPrefix } from '../repositories/api-key.repository.js';
import { accountPublicId, accountUidOf, subscriptionPublicId } from './public-ids.js';

export interface NewAccount {
  account_id: string;
  subscription_id: string;
  api_key: string;
  key_prefix: string;
}

/** An account, its subscription and its first key, all or nothing. The key is only ever shown here. */
export async function createAccount(
  db: Db,
  input: { name: string; credits: number; anchorDate: string },
): Promise<NewAccount> {
  return db.transaction().execute(async (trx) => {
    const account = await insertAccount(trx, input.name);
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
