import type { Db } from '../../shared/db.js';
import type { RateLimitRule } from './redis-counters.js';

/** What a request needs to know about the key it presented: who pays and under which plan. */
export interface KeyPrincipal {
  keyId: number;
  hash: Buffer;
  accountId: number;
  accountUid: string;
  subscriptionId: number;
  subscriptionUid: string;
  credits: number;
  anchorDate: string;
  /** The account's rate limit; null: none. */
  rateLimit: RateLimitRule | null;
}

export async function insertApiKey(db: Db, accountId: number, prefix: string, hash: Buffer) {
  return db
    .insertInto('api_keys')
    .values({ account_id: accountId, prefix, hash })
    .returning(['id', 'prefix'])
    .executeTakeFirstOrThrow();
}

/** The live (not revoked) key stored under `prefix`, with its account's plan. */
export async function findLiveKeyByPrefix(db: Db, prefix: string): Promise<KeyPrincipal | undefined> {
  const row = await db
    .selectFrom('api_keys as k')
    .innerJoin('accounts as a', 'a.id', 'k.account_id')
    .innerJoin('subscriptions as s', 's.account_id', 'a.id')
    .select([
      'k.id as keyId',
      'k.hash as hash',
      'a.id as accountId',
      'a.uid as accountUid',
      's.id as subscriptionId',
      's.uid as subscriptionUid',
      's.credits as credits',
      's.anchor_date as anchorDate',
      'a.rate_limit_requests',
      'a.rate_limit_seconds',
    ])
    .where('k.prefix', '=', prefix)
    .where('k.revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return undefined;
  const { rate_limit_requests: max, rate_limit_seconds: windowSeconds, ...principal } = row;
  return { ...principal, rateLimit: max && windowSeconds ? { max, windowSeconds } : null };
}

export async function isKeyLive(db: Db, keyId: number): Promise<boolean> {
  const row = await db
    .selectFrom('api_keys')
    .select('id')
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}

/** Marks the key revoked; returns its id, or undefined when no live key has that prefix. */
export async function revokeKeyByPrefix(db: Db, prefix: string, at: Date) {
  return db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('prefix', '=', prefix)
    .where('revoked_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
}
