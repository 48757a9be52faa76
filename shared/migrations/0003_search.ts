import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // Org changes waiting to reach the search index. Statement-level triggers with transition tables
  // write ONE row per statement holding the array of changed Org ids, so a 10,000-row import batch
  // costs one extra insert, not 10,000. The indexer deletes a row only after Meilisearch reported
  // the task holding its Orgs as succeeded; anything not deleted is retried by the next run.
  await sql`
    create table search_outbox (
      seq bigint generated always as identity primary key,
      org_ids bigint[] not null,
      created_at timestamptz not null default now()
    )`.execute(db);

  await sql`
    create function search_outbox_from_new() returns trigger language plpgsql as $$
    begin
      insert into search_outbox (org_ids)
      select array_agg(id) from new_rows having count(*) > 0;
      return null;
    end $$`.execute(db);
  // An update reaches the index only when something the index holds changed (name, updated,
  // version); updates of other columns (last_run_id, ...) cost nothing here.
  await sql`
    create function search_outbox_from_update() returns trigger language plpgsql as $$
    begin
      insert into search_outbox (org_ids)
      select array_agg(n.id) from new_rows n join old_rows o on o.id = n.id
      where n.name is distinct from o.name
         or n.updated is distinct from o.updated
         or n.version_number is distinct from o.version_number
      having count(*) > 0;
      return null;
    end $$`.execute(db);
  await sql`
    create function search_outbox_from_old() returns trigger language plpgsql as $$
    begin
      insert into search_outbox (org_ids)
      select array_agg(id) from old_rows having count(*) > 0;
      return null;
    end $$`.execute(db);

  await sql`
    create trigger orgs_search_insert after insert on orgs
    referencing new table as new_rows
    for each statement execute function search_outbox_from_new()`.execute(db);
  await sql`
    create trigger orgs_search_update after update on orgs
    referencing old table as old_rows new table as new_rows
    for each statement execute function search_outbox_from_update()`.execute(db);
  await sql`
    create trigger orgs_search_delete after delete on orgs
    referencing old table as old_rows
    for each statement execute function search_outbox_from_old()`.execute(db);

  // A running `bizdir reindex`: the index it is building. While a row exists, the indexer also
  // records the Orgs it indexes into search_reindex_replay, and the rebuild replays them into its
  // new index before the swap, so changes committed during the rebuild are not lost.
  await sql`
    create table search_reindex (
      target text primary key,
      started_at timestamptz not null default now()
    )`.execute(db);
  await sql`
    create table search_reindex_replay (
      target text not null references search_reindex (target) on delete cascade,
      org_ids bigint[] not null
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists search_reindex_replay`.execute(db);
  await sql`drop table if exists search_reindex`.execute(db);
  await sql`drop trigger if exists orgs_search_delete on orgs`.execute(db);
  await sql`drop trigger if exists orgs_search_update on orgs`.execute(db);
  await sql`drop trigger if exists orgs_search_insert on orgs`.execute(db);
  await sql`drop function if exists search_outbox_from_old()`.execute(db);
  await sql`drop function if exists search_outbox_from_update()`.execute(db);
  await sql`drop function if exists search_outbox_from_new()`.execute(db);
  await sql`drop table if exists search_outbox`.execute(db);
}
