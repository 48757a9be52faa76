import { type AliasedRawBuilder, sql } from 'kysely';

/**
 * Rows as a table for one bulk statement: `unnest($1::t1[], $2::t2[], ...) as alias(c1, c2, ...)`.
 * One bind parameter per column whatever the number of rows (a multi-row VALUES list would take one
 * per cell and hit Postgres's 65,535-parameter limit at a few thousand rows), and one plan for every
 * batch size.
 *
 * The result is a typed Kysely table: `updateTable('orgs').from(bulkRows(...))` and
 * `insertInto(...).columns([...]).expression((eb) => eb.selectFrom(bulkRows(...)).select([...]))` let
 * the compiler check both the written table's columns and the columns read from the rows, which a
 * raw SQL template cannot.
 */
export type PgArrayOf = 'text' | 'bigint' | 'integer' | 'boolean' | 'date';

export function bulkRows<R extends Record<string, unknown>, A extends string>(
  alias: A,
  types: { readonly [K in keyof R & string]: PgArrayOf },
  rows: readonly R[],
): AliasedRawBuilder<R, A> {
  const columns = Object.keys(types) as (keyof R & string)[];
  const arrays = columns.map(
    (c) => sql`${rows.map((r) => (r[c] === undefined ? null : r[c]))}::${sql.raw(types[c])}[]`,
  );
  return sql<R>`unnest(${sql.join(arrays)})`.as<A>(
    sql`${sql.id(alias)}(${sql.join(columns.map((c) => sql.id(c)))})`,
  );
}
