import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // Several Meilisearch replicas (MEILI_URL lists them), each with the whole index and its own
  // progress: one row per replica while more than one is configured (none with one: the outbox
  // itself is then the one index's progress). The indexing worker keeps the rows equal to its list.
  await sql`
    create table search_replicas (
      name text primary key,
      added_at timestamptz not null default now()
    )`.execute(db);
  // The outbox rows a replica has not confirmed yet: one row per replica for every outbox row
  // written while replicas are registered (the trigger below), deleted as that replica's indexer
  // settles it; the outbox row itself goes once no replica still has it pending.
  await sql`
    create table search_replica_pending (
      replica text not null references search_replicas (name) on delete cascade,
      seq bigint not null references search_outbox (seq) on delete cascade,
      primary key (replica, seq)
    )`.execute(db);
  await sql`create index search_replica_pending_seq on search_replica_pending (seq)`.execute(db);
  await sql`
    create function search_replica_pending_fan_out() returns trigger language plpgsql as $$
    begin
      insert into search_replica_pending (replica, seq) select name, new.seq from search_replicas;
      return null;
    end $$`.execute(db);
  await sql`
    create trigger search_outbox_fan_out after insert on search_outbox
    for each row execute function search_replica_pending_fan_out()`.execute(db);
  // A rebuild in progress belongs to one replica ('' with a single Meilisearch).
  await sql`alter table search_reindex add column replica text not null default ''`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table search_reindex drop column replica`.execute(db);
  await sql`drop trigger if exists search_outbox_fan_out on search_outbox`.execute(db);
  await sql`drop function if exists search_replica_pending_fan_out()`.execute(db);
  await sql`drop table if exists search_replica_pending`.execute(db);
  await sql`drop table if exists search_replicas`.execute(db);
}
