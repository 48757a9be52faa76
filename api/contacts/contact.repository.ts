import type { Db } from '../../shared/db.js';
import type { NormalizedContact } from './contact.normalize.js';

/**
 * Inserts a contact unless the account already has one with this email; returns the new contact's
 * id, or undefined when the email was taken (also under concurrent posts: the unique index decides).
 */
export async function insertContactIfNew(db: Db, accountId: number, c: NormalizedContact) {
  return db
    .insertInto('contacts')
    .values({
      account_id: accountId,
      email_key: c.emailKey,
      first_name: c.firstName,
      last_name: c.lastName,
      data: JSON.stringify(c.data),
    })
    .onConflict((oc) =>
      oc.columns(['account_id', 'email_key']).where('email_key', 'is not', null).doNothing(),
    )
    .returning('uid')
    .executeTakeFirst();
}

export async function findContactIdByEmail(db: Db, accountId: number, emailKey: string) {
  return db
    .selectFrom('contacts')
    .select('uid')
    .where('account_id', '=', accountId)
    .where('email_key', '=', emailKey)
    .executeTakeFirst();
}
