import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // bizdir_uid (0001) as the same permutation with its loops unrolled: four rounds, then the eight
  // base-36 digits in one expression. Same values for every id (test/schema.test.ts compares the two
  // over a range and at the ends of the id space), so every stored uid stays as it is; a call costs
  // far less plpgsql time (docs/journal/2026-11-24.md, 23:20), and a new Org and its address call it
  // once each.
  await sql`
    create or replace function bizdir_uid(n bigint) returns text
    language plpgsql immutable strict parallel safe as $$
    declare
      r0 bigint := n & 1048575;
      r1 bigint;
      r2 bigint;
      r3 bigint;
      r4 bigint;
      v bigint;
    begin
      if n < 0 or n >= 1099511627776 then
        raise exception 'bizdir_uid: % is outside the id space', n;
      end if;
      r1 := ((n >> 20) & 1048575) # ((((r0 * 1103515245 + 12345 + 7919) >> 7) # (r0 << 3)) & 1048575);
      r2 := r0 # ((((r1 * 1103515245 + 12345 + 15838) >> 7) # (r1 << 3)) & 1048575);
      r3 := r1 # ((((r2 * 1103515245 + 12345 + 23757) >> 7) # (r2 << 3)) & 1048575);
      r4 := r2 # ((((r3 * 1103515245 + 12345 + 31676) >> 7) # (r3 << 3)) & 1048575);
      v := (r4 << 20) | r3;
      return substr('0123456789abcdefghijklmnopqrstuvwxyz', (v / 78364164096 % 36)::int + 1, 1) ||
        substr('0123456789abcdefghijklmnopqrstuvwxyz', (v / 2176782336 % 36)::int + 1, 1) ||
        substr('0123456789abcdefghijklmnopqrstuvwxyz', (v / 60466176 % 36)::int + 1, 1) ||
        substr('0123456789abcdefghijklmnopqrstuvwxyz', (v / 1679616 % 36)::int + 1, 1) ||
        substr('0123456789abcdefghijklmnopqrstuvwxyz', (v / 46656 % 36)::int + 1, 1) ||
        substr('0123456789abcdefghijklmnopqrstuvwxyz', (v / 1296 % 36)::int + 1, 1) ||
        substr('0123456789abcdefghijklmnopqrstuvwxyz', (v / 36 % 36)::int + 1, 1) ||
        substr('0123456789abcdefghijklmnopqrstuvwxyz', (v / 1 % 36)::int + 1, 1);
    end $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    create or replace function bizdir_uid(n bigint) returns text
    language plpgsql immutable strict parallel safe as $$
    declare
      l bigint := (n >> 20) & 1048575;
      r bigint := n & 1048575;
      t bigint;
      v bigint;
      s text := '';
      i int;
    begin
      if n < 0 or n >= 1099511627776 then
        raise exception 'bizdir_uid: % is outside the id space', n;
      end if;
      for i in 1..4 loop
        t := r;
        r := l # ((((r * 1103515245 + 12345 + i * 7919) >> 7) # (r << 3)) & 1048575);
        l := t;
      end loop;
      v := (r << 20) | l;
      for i in 1..8 loop
        s := substr('0123456789abcdefghijklmnopqrstuvwxyz', (v % 36)::int + 1, 1) || s;
        v := v / 36;
      end loop;
      return s;
    end $$`.execute(db);
}
