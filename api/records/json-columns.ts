import { type RawBuilder, sql } from 'kysely';

/**
 * `json_build_object` of the named columns of a joined alias, or SQL null when the join found no row
 * (see ADDRESS_JSON_COLUMNS in records.ts for why not `to_jsonb(alias)`).
 */
export function jsonOf<T>(alias: string, columns: readonly string[]): RawBuilder<T | null> {
  const pairs = sql.join(columns.map((c) => sql`${sql.lit(c)}, ${sql.ref(`${alias}.${c}`)}`));
  return sql<T | null>`case when ${sql.ref(`${alias}.id`)} is null then null else json_build_object(${pairs}) end`;
}
