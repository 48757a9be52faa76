import { type Kysely, sql, type Transaction } from 'kysely';
import type { Db } from '../../shared/db.js';
import type { Database } from '../../shared/tables.js';

/**
 * The only writer of webhook_endpoints (what an account asked for). Reads join each endpoint's
 * delivery state (webhook_deliveries, written by webhooks/delivery.repository.ts) for the views.
 */

/** Serialises creations per account, so concurrent POSTs cannot pass WEBHOOKS_MAX_ENDPOINTS together. */
export async function lockAccountEndpoints(trx: Transaction<Database>, accountId: number): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`webhook_endpoints:${accountId}`}, 0))`.execute(
    trx,
  );
}

export async function countEndpoints(trx: Transaction<Database>, accountId: number): Promise<number> {
  const row = await trx
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertEndpoint(
  trx: Transaction<Database>,
  e: { accountId: number; url: string; types: string[]; batch: boolean; secret: string },
) {
  return trx
    .insertInto('webhook_endpoints')
    .values({ account_id: e.accountId, url: e.url, types: e.types, batch: e.batch, secret: e.secret })
    .returning(['id', 'uid'])
    .executeTakeFirstOrThrow();
}

/** The endpoint's id when it exists and (with `accountId`) belongs to that account. */
export async function findEndpointId(db: Kysely<Database>, uid: string, accountId: number | null) {
  let q = db.selectFrom('webhook_endpoints').select('id').where('uid', '=', uid);
  if (accountId !== null) q = q.where('account_id', '=', accountId);
  return (await q.executeTakeFirst())?.id;
}

/** One endpoint and its delivery state, or every endpoint of an account (null: of every account). */
function endpointsQuery(db: Kysely<Database>) {
  return db
    .selectFrom('webhook_endpoints as e')
    .innerJoin('webhook_deliveries as d', 'd.endpoint_id', 'e.id')
    .innerJoin('accounts as a', 'a.id', 'e.account_id')
    .select([
      'e.id',
      'e.uid',
      'a.uid as account_uid',
      'e.url',
      'e.types',
      'e.batch',
      'e.created_at',
      'e.previous_secret_until',
      'd.status',
      'd.disabled_reason',
      'd.after_event',
      'd.failures',
      'd.failing_since',
      'd.next_attempt_at',
      'd.last_error',
      'd.last_success_at',
      'd.replay_from',
      'd.replay_to',
      'd.replay_until',
    ]);
}

export type EndpointRow = NonNullable<Awaited<ReturnType<typeof findEndpoint>>>;

export async function findEndpoint(db: Kysely<Database>, id: number) {
  return endpointsQuery(db).where('e.id', '=', id).executeTakeFirst();
}

export async function listEndpoints(db: Db, accountId: number | null) {
  let q = endpointsQuery(db).orderBy('e.id');
  if (accountId !== null) q = q.where('e.account_id', '=', accountId);
  return q.execute();
}

/** Deletes an endpoint (its delivery state and attempts go with it); false when there was none. */
export async function deleteEndpoint(db: Db, id: number): Promise<boolean> {
  const result = await db.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * A new secret; the current one keeps signing until `previousUntil`. A second rotation within that
 * time drops the oldest: two secrets at most sign a request.
 */
export async function rotateSecret(db: Db, id: number, secret: string, previousUntil: Date) {
  return db
    .updateTable('webhook_endpoints')
    .set((eb) => ({ previous_secret: eb.ref('secret'), previous_secret_until: previousUntil, secret }))
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
}
