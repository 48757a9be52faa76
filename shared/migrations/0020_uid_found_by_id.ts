import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

/** The tables written by the bulk imports, whose `uid` index was one random-order btree insert a row. */
const TABLES = ['orgs', 'addresses', 'locations'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  // bizdir_uid is a permutation of the id space (a Feistel network, 0001), so a uid is unique
  // because the id is, and the id of a uid can be computed. This is that inverse: the id whose
  // uid is `u`, or null when `u` is not the uid of any id (not 8 characters of [0-9a-z], or a
  // value past the 40-bit id space). It does not check that a row with that id exists.
  await sql`
    create function bizdir_uid_id(u text) returns bigint
    language plpgsql immutable strict parallel safe as $$
    declare
      v bigint := 0;
      l bigint;
      r bigint;
      t bigint;
      i int;
    begin
      if u !~ '^[0-9a-z]{8}$' then
        return null;
      end if;
      for i in 1..8 loop
        v := v * 36 + strpos('0123456789abcdefghijklmnopqrstuvwxyz', substr(u, i, 1)) - 1;
      end loop;
      if v >= 1099511627776 then
        return null;
      end if;
      r := v >> 20;
      l := v & 1048575;
      for i in reverse 4..1 loop
        t := l;
        l := r # ((((t * 1103515245 + 12345 + i * 7919) >> 7) # (t << 3)) & 1048575);
        r := t;
      end loop;
      return (l << 20) | r;
    end $$`.execute(db);

  // The unique index on uid of the three tables the imports fill is dropped: the domain lookups
  // find the row by its primary key (id = bizdir_uid_id(uid)) and recheck the uid. Each index was
  // a btree whose key order is random against the insert order, so at a million rows and more
  // every new Org, Address and Location read and dirtied a page of it that was rarely in
  // shared_buffers (docs/imports.md). The smaller tables (accounts, contacts, subscriptions) keep
  // theirs. Dropping an index is a catalog change and frees its disk; no row is touched.
  for (const table of TABLES) {
    await sql`alter table ${sql.table(table)} drop constraint ${sql.id(`${table}_uid_key`)}`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    await sql`alter table ${sql.table(table)} add constraint ${sql.id(`${table}_uid_key`)} unique (uid)`.execute(
      db,
    );
  }
  await sql`drop function bizdir_uid_id(text)`.execute(db);
}
