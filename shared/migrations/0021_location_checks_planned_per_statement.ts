import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

/** One reference check of a statement-level trigger: `bad` is a query over the transition tables. */
interface Check {
  bad: string;
  constraint: string;
  message: string;
}

/**
 * A trigger function that runs each check as its own EXECUTE, so each is planned for the statement at
 * hand: with the transition tables' real row counts and the referenced tables' current size. A
 * static query in PL/pgSQL keeps the plan it was given on its first call in a session; when that call
 * saw one row, a later large update joined old_rows to new_rows by a nested loop (seconds per check
 * in a Location import: docs/journal/2026-11-25.md, 23:31), and
 * a probe planned while the referenced table was nearly empty could stay a sequential scan.
 */
function checkFunction(name: string, checks: Check[]) {
  const body = checks
    .map(
      (c) => `
      execute $q$ select exists (${c.bad}) $q$ into found_bad;
      if found_bad then
        raise exception using errcode = 'foreign_key_violation', constraint = '${c.constraint}',
          message = '${c.message.replaceAll("'", "''")}';
      end if;`,
    )
    .join('');
  return sql.raw(`
    create or replace function ${name}() returns trigger language plpgsql as $$
    declare
      found_bad boolean;
    begin${body}
      return null;
    end $$`);
}

/** A probe of `table`'s primary key for `column` of each row of `rows` (`n`) that finds nothing. */
const missing = (table: string, column: string) =>
  `cross join lateral (select count(*) as found from (select 1 from ${table} r
     where r.id = n.${column} limit 1) x) k where k.found = 0`;

const inserted = (table: string, constraint: string) =>
  `insert or update on table "${table}" violates foreign key constraint "${constraint}"`;
const deleted = (table: string, constraint: string, from: string) =>
  `update or delete on table "${table}" violates foreign key constraint "${constraint}" on table "${from}"`;

export async function up(db: Kysely<unknown>): Promise<void> {
  // The Location feed COPYs its rows, 5,000 a statement. The three foreign keys below checked each
  // row on its own: an SPI query and a row lock on the referenced Org, Address or Location (the
  // lock rewrites that row's header and logs it). They are replaced by statement-level checks over
  // the statement's transition table, as migration 0016 did for the register's Orgs and labels:
  // one query a statement (an index probe a row, no lock), raising the same error (23503, the same
  // constraint name) when a row names a missing Org, Address or Location. The delete side (an Org
  // or an Address a Location still names, a Location that still has labels) is checked the same
  // way. What the row locks also covered and these checks do not: a delete of the referenced row
  // committed by another transaction between the check and the commit (nothing in bizdir deletes
  // Orgs, Addresses or Locations), and TRUNCATE of the referenced table.
  await sql`alter table locations drop constraint if exists locations_org_id_fkey`.execute(db);
  await sql`alter table locations drop constraint if exists locations_address_id_fkey`.execute(db);
  await sql`alter table location_public_domains drop constraint if exists location_public_domains_location_id_fkey`.execute(
    db,
  );

  const orgFk = 'locations_org_id_fkey';
  const addressFk = 'locations_address_id_fkey';
  const labelFk = 'location_public_domains_location_id_fkey';
  await checkFunction('bizdir_locations_refs_check', [
    {
      bad: `select 1 from new_rows n ${missing('orgs', 'org_id')}`,
      constraint: orgFk,
      message: inserted('locations', orgFk),
    },
    {
      bad: `select 1 from new_rows n ${missing('addresses', 'address_id')} and n.address_id is not null`,
      constraint: addressFk,
      message: inserted('locations', addressFk),
    },
  ]).execute(db);
  // An update is probed only where it moved the reference (a re-import's updates of other columns,
  // defaults and fingerprints above all, cost a hash join of the two transition tables).
  await checkFunction('bizdir_locations_refs_update_check', [
    {
      bad: `select 1 from new_rows n join old_rows o on o.id = n.id and n.org_id is distinct from o.org_id
        ${missing('orgs', 'org_id')}`,
      constraint: orgFk,
      message: inserted('locations', orgFk),
    },
    {
      bad: `select 1 from new_rows n join old_rows o on o.id = n.id and n.address_id is distinct from o.address_id
        ${missing('addresses', 'address_id')} and n.address_id is not null`,
      constraint: addressFk,
      message: inserted('locations', addressFk),
    },
  ]).execute(db);
  await checkFunction('bizdir_location_labels_check', [
    {
      bad: `select 1 from new_rows n ${missing('locations', 'location_id')}`,
      constraint: labelFk,
      message: inserted('location_public_domains', labelFk),
    },
  ]).execute(db);
  await checkFunction('bizdir_orgs_locations_delete_check', [
    {
      bad: 'select 1 from old_rows o cross join lateral (select 1 from locations l where l.org_id = o.id limit 1) l',
      constraint: orgFk,
      message: deleted('orgs', orgFk, 'locations'),
    },
  ]).execute(db);
  // locations.address_id has no index (nothing reads Locations by Address): one join a statement,
  // where the foreign key scanned locations once per deleted Address.
  await checkFunction('bizdir_addresses_locations_delete_check', [
    {
      bad: 'select 1 from old_rows a join locations l on l.address_id = a.id',
      constraint: addressFk,
      message: deleted('addresses', addressFk, 'locations'),
    },
  ]).execute(db);
  await checkFunction('bizdir_locations_labels_delete_check', [
    {
      bad: 'select 1 from old_rows o cross join lateral (select 1 from location_public_domains d where d.location_id = o.id limit 1) d',
      constraint: labelFk,
      message: deleted('locations', labelFk, 'location_public_domains'),
    },
  ]).execute(db);

  // Migration 0016's checks, the same queries, now planned per statement too (their static form had
  // the same cached-plan trap: the update check's nested loop over two 5,000-row transition tables).
  const orgAddressFk = 'orgs_registered_address_id_fkey';
  const orgLabelFk = 'org_public_domains_org_id_fkey';
  await checkFunction('bizdir_orgs_address_check', [
    {
      bad: `select 1 from new_rows n ${missing('addresses', 'registered_address_id')} and n.registered_address_id is not null`,
      constraint: orgAddressFk,
      message: inserted('orgs', orgAddressFk),
    },
  ]).execute(db);
  await checkFunction('bizdir_orgs_address_update_check', [
    {
      bad: `select 1 from new_rows n join old_rows o on o.id = n.id
        and n.registered_address_id is distinct from o.registered_address_id
        ${missing('addresses', 'registered_address_id')} and n.registered_address_id is not null`,
      constraint: orgAddressFk,
      message: inserted('orgs', orgAddressFk),
    },
  ]).execute(db);
  await checkFunction('bizdir_labels_org_check', [
    {
      bad: `select 1 from new_rows n ${missing('orgs', 'org_id')}`,
      constraint: orgLabelFk,
      message: inserted('org_public_domains', orgLabelFk),
    },
  ]).execute(db);
  await checkFunction('bizdir_orgs_delete_check', [
    {
      bad: 'select 1 from old_rows o cross join lateral (select 1 from org_public_domains d where d.org_id = o.id limit 1) d',
      constraint: orgLabelFk,
      message: deleted('orgs', orgLabelFk, 'org_public_domains'),
    },
  ]).execute(db);
  await checkFunction('bizdir_addresses_delete_check', [
    {
      bad: 'select 1 from old_rows a join orgs o on o.registered_address_id = a.id',
      constraint: orgAddressFk,
      message: deleted('addresses', orgAddressFk, 'orgs'),
    },
  ]).execute(db);

  // The search outbox's update trigger (migration 0003) joins the same two transition tables, and a
  // large update of orgs after a one-row one was slow in it too (docs/journal/2026-11-25.md, 23:31).
  await sql`
    create or replace function search_outbox_from_update() returns trigger language plpgsql as $$
    begin
      execute $q$
        insert into search_outbox (org_ids)
        select array_agg(n.id) from new_rows n join old_rows o on o.id = n.id
        where n.name is distinct from o.name
           or n.updated is distinct from o.updated
           or n.version_number is distinct from o.version_number
        having count(*) > 0 $q$;
      return null;
    end $$`.execute(db);

  // Ids are identity columns GENERATED ALWAYS (an UPDATE cannot change them), so only inserts and
  // updates of the referencing columns, and deletes of the referenced rows, can break a reference.
  for (const [trigger, event, table, fn, transition] of [
    [
      'locations_refs_check_insert',
      'insert',
      'locations',
      'bizdir_locations_refs_check',
      'new table as new_rows',
    ],
    [
      'locations_refs_check_update',
      'update',
      'locations',
      'bizdir_locations_refs_update_check',
      'old table as old_rows new table as new_rows',
    ],
    [
      'location_public_domains_check_insert',
      'insert',
      'location_public_domains',
      'bizdir_location_labels_check',
      'new table as new_rows',
    ],
    [
      'location_public_domains_check_update',
      'update',
      'location_public_domains',
      'bizdir_location_labels_check',
      'new table as new_rows',
    ],
    [
      'orgs_locations_check_delete',
      'delete',
      'orgs',
      'bizdir_orgs_locations_delete_check',
      'old table as old_rows',
    ],
    [
      'addresses_locations_check_delete',
      'delete',
      'addresses',
      'bizdir_addresses_locations_delete_check',
      'old table as old_rows',
    ],
    [
      'locations_labels_check_delete',
      'delete',
      'locations',
      'bizdir_locations_labels_delete_check',
      'old table as old_rows',
    ],
  ] as const) {
    await sql
      .raw(
        `create trigger ${trigger} after ${event} on ${table} referencing ${transition} for each statement execute function ${fn}()`,
      )
      .execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // Migration 0016's functions and the outbox's update trigger keep their per-statement planning (the
  // same queries).
  for (const [trigger, table] of [
    ['locations_refs_check_insert', 'locations'],
    ['locations_refs_check_update', 'locations'],
    ['location_public_domains_check_insert', 'location_public_domains'],
    ['location_public_domains_check_update', 'location_public_domains'],
    ['orgs_locations_check_delete', 'orgs'],
    ['addresses_locations_check_delete', 'addresses'],
    ['locations_labels_check_delete', 'locations'],
  ] as const) {
    await sql`drop trigger if exists ${sql.id(trigger)} on ${sql.table(table)}`.execute(db);
  }
  for (const fn of [
    'bizdir_locations_refs_check',
    'bizdir_locations_refs_update_check',
    'bizdir_location_labels_check',
    'bizdir_orgs_locations_delete_check',
    'bizdir_addresses_locations_delete_check',
    'bizdir_locations_labels_delete_check',
  ]) {
    await sql`drop function if exists ${sql.id(fn)}()`.execute(db);
  }
  await sql`
    alter table locations add constraint locations_org_id_fkey foreign key (org_id) references orgs (id)`.execute(
    db,
  );
  await sql`
    alter table locations add constraint locations_address_id_fkey
      foreign key (address_id) references addresses (id)`.execute(db);
  await sql`
    alter table location_public_domains add constraint location_public_domains_location_id_fkey
      foreign key (location_id) references locations (id)`.execute(db);
}
