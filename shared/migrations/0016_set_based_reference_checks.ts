import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // A first register import writes an Org and its public label per company, 5,000 per statement.
  // The two foreign keys below checked each row on its own (an SPI query with a row lock on the
  // referenced row), a large share of each 5,000-company insert (docs/journal/2026-11-25.md, 02:24).
  // They are replaced by statement-level checks over the statement's transition table: one query
  // per statement (an index probe per row, no row lock), raising the same error (23503, the same
  // constraint name) when a row names a missing Address or Org. The delete side (an Org that still has labels, an Address an Org still points
  // at) is checked the same way. What the row locks also covered and these checks do not: a delete
  // of the referenced row committed by another transaction between the check and the commit (nothing
  // in bizdir deletes Orgs or Addresses).
  await sql`alter table orgs drop constraint if exists orgs_registered_address_id_fkey`.execute(db);
  await sql`alter table org_public_domains drop constraint if exists org_public_domains_org_id_fkey`.execute(
    db,
  );

  await sql`
    create function bizdir_orgs_address_check() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from new_rows n
                 cross join lateral (select count(*) as found from (select 1 from addresses a
                   where a.id = n.registered_address_id limit 1) x) k
                 where n.registered_address_id is not null and k.found = 0) then
        raise exception using errcode = 'foreign_key_violation', constraint = 'orgs_registered_address_id_fkey',
          message = 'insert or update on table "orgs" violates foreign key constraint "orgs_registered_address_id_fkey"';
      end if;
      return null;
    end $$`.execute(db);
  // An update is checked only where it moved the reference (a re-import's updates of other columns,
  // fingerprints above all, cost a join of the two transition tables, not a probe per row).
  await sql`
    create function bizdir_orgs_address_update_check() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from new_rows n join old_rows o on o.id = n.id
                 cross join lateral (select count(*) as found from (select 1 from addresses a
                   where a.id = n.registered_address_id limit 1) x) k
                 where n.registered_address_id is not null
                   and n.registered_address_id is distinct from o.registered_address_id and k.found = 0) then
        raise exception using errcode = 'foreign_key_violation', constraint = 'orgs_registered_address_id_fkey',
          message = 'insert or update on table "orgs" violates foreign key constraint "orgs_registered_address_id_fkey"';
      end if;
      return null;
    end $$`.execute(db);
  await sql`
    create function bizdir_labels_org_check() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from new_rows n
                 cross join lateral (select count(*) as found from (select 1 from orgs o
                   where o.id = n.org_id limit 1) x) k
                 where k.found = 0) then
        raise exception using errcode = 'foreign_key_violation', constraint = 'org_public_domains_org_id_fkey',
          message = 'insert or update on table "org_public_domains" violates foreign key constraint "org_public_domains_org_id_fkey"';
      end if;
      return null;
    end $$`.execute(db);
  await sql`
    create function bizdir_orgs_delete_check() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from old_rows o
                 cross join lateral (select 1 from org_public_domains d where d.org_id = o.id limit 1) d) then
        raise exception using errcode = 'foreign_key_violation', constraint = 'org_public_domains_org_id_fkey',
          message = 'update or delete on table "orgs" violates foreign key constraint "org_public_domains_org_id_fkey" on table "org_public_domains"';
      end if;
      return null;
    end $$`.execute(db);
  await sql`
    create function bizdir_addresses_delete_check() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from old_rows a join orgs o on o.registered_address_id = a.id) then
        raise exception using errcode = 'foreign_key_violation', constraint = 'orgs_registered_address_id_fkey',
          message = 'update or delete on table "addresses" violates foreign key constraint "orgs_registered_address_id_fkey" on table "orgs"';
      end if;
      return null;
    end $$`.execute(db);

  // Each check probes the referenced table's key once per row (a lateral subquery with LIMIT 1, which
  // the planner cannot turn into a hash join over a scan of the whole referenced table, whatever
  // statistics the cached plan was made with).
  // Ids are identity columns GENERATED ALWAYS (an UPDATE cannot change them), so only inserts and
  // updates of the referencing column, and deletes of the referenced rows, can break a reference.
  await sql`
    create trigger orgs_address_check_insert after insert on orgs
    referencing new table as new_rows for each statement execute function bizdir_orgs_address_check()`.execute(
    db,
  );
  await sql`
    create trigger orgs_address_check_update after update on orgs
    referencing old table as old_rows new table as new_rows
    for each statement execute function bizdir_orgs_address_update_check()`.execute(db);
  await sql`
    create trigger org_public_domains_org_check_insert after insert on org_public_domains
    referencing new table as new_rows for each statement execute function bizdir_labels_org_check()`.execute(
    db,
  );
  await sql`
    create trigger org_public_domains_org_check_update after update on org_public_domains
    referencing new table as new_rows for each statement execute function bizdir_labels_org_check()`.execute(
    db,
  );
  await sql`
    create trigger orgs_labels_check_delete after delete on orgs
    referencing old table as old_rows for each statement execute function bizdir_orgs_delete_check()`.execute(
    db,
  );
  await sql`
    create trigger addresses_orgs_check_delete after delete on addresses
    referencing old table as old_rows for each statement execute function bizdir_addresses_delete_check()`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const [trigger, table] of [
    ['orgs_address_check_insert', 'orgs'],
    ['orgs_address_check_update', 'orgs'],
    ['org_public_domains_org_check_insert', 'org_public_domains'],
    ['org_public_domains_org_check_update', 'org_public_domains'],
    ['orgs_labels_check_delete', 'orgs'],
    ['addresses_orgs_check_delete', 'addresses'],
  ] as const) {
    await sql`drop trigger if exists ${sql.id(trigger)} on ${sql.table(table)}`.execute(db);
  }
  for (const fn of [
    'bizdir_orgs_address_check',
    'bizdir_orgs_address_update_check',
    'bizdir_labels_org_check',
    'bizdir_orgs_delete_check',
    'bizdir_addresses_delete_check',
  ]) {
    await sql`drop function if exists ${sql.id(fn)}()`.execute(db);
  }
  await sql`
    alter table orgs add constraint orgs_registered_address_id_fkey
      foreign key (registered_address_id) references addresses (id)`.execute(db);
  await sql`
    alter table org_public_domains add constraint org_public_domains_org_id_fkey
      foreign key (org_id) references orgs (id)`.execute(db);
}
