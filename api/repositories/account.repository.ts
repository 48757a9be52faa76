import type { Transaction } from 'kysely';
import type { Database } from '../../shared/database.js';
import type { Db } from '../../shared/db.js';

export interface CreatedAccount {
  accountId: number;
  accountUid: string;
  subscriptionId: number;
  subscriptionUid: string;
}

export async function insertAccount(trx: Transaction<Database>, name: string) {
  return trx.insertInto('accounts').values({ name }).returning(['id', 'uid']).executeTakeFirstOrThrow();
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
