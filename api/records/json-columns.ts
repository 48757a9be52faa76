import { type RawBuilder, sql } from 'kysely';
import { uidOf } from '../../shared/org-domains.js';

/**
 * `json_build_object` of the named columns of a joined alias, or SQL null when the join found no row
 * (see ADDRESS_JSON_COLUMNS in records.ts for why not `to_jsonb(alias)`). With `uidFromId`, `uid` is
 * computed from the id (the table stores none: Orgs and Addresses, migration 0023).
 */
export function jsonOf<T>(
  alias: string,
  columns: readonly string[],
  { uidFromId = false }: { uidFromId?: boolean } = {},
): RawBuilder<T | null> {
  const pairs = sql.join(
    columns.map((c) =>
      c === 'uid' && uidFromId
        ? sql`${sql.lit(c)}, ${uidOf(alias)}`
        : sql`${sql.lit(c)}, ${sql.ref(`${alias}.${c}`)}`,
    ),
  );
  return sql<T | null>`case when ${sql.ref(`${alias}.id`)} is null then null else json_build_object(${pairs}) end`;
}
