import { type RawBuilder, sql } from 'kysely';
import { uidOf } from '../../shared/org-domains.read-model.js';
import {
  ADDRESS_JSON_COLUMNS,
  type AddressRecord,
  LOCATION_JSON_COLUMNS,
  type LocationRecord,
} from './records.js';

/**
 * The nested records the Org and Location read models select beside their own columns: an
 * Address or a Location of a joined alias as one JSON object of the columns the views read
 * (records.ts), or SQL null when the join found no row.
 */

/** The Address joined as `alias`; its `uid` is computed from the id (the table stores none, migration 0023). */
export const addressJson = (alias: string): RawBuilder<AddressRecord | null> =>
  jsonOf<AddressRecord>(alias, ADDRESS_JSON_COLUMNS, { uidFromId: true });

/** The Location joined as `alias`. */
export const locationJson = (alias: string): RawBuilder<LocationRecord | null> =>
  jsonOf<LocationRecord>(alias, LOCATION_JSON_COLUMNS);

/**
 * `json_build_object` of the named columns, rather than `to_jsonb(alias)`, which converts every
 * column, wide ones included (see ADDRESS_JSON_COLUMNS in records.ts).
 */
function jsonOf<T>(
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
