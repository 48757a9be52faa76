import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

/**
 * The change feed (docs/events.md): one `events` row per record created, per `version_number` bump,
 * per Org leaving the register and per Location closing, written by statement-level triggers with
 * transition tables in the transaction that makes the change, whatever writes it; and
 * `import.started` / `import.completed` around each import run. A bump that also marks an Org as
 * gone (or closes a Location) is ONE event, `org.left_register` (`location.closed`), carrying that
 * version: each (record, version) has exactly one event, so a consumer sees a missed version as a
 * hole in the numbers.
 *
 * `data` holds what the read model (api/events) needs to render the public event without a join:
 * the record's labels (`cc`, `slug`; Locations their stored `uid`) and ids, never the domain suffix
 * (configuration, not data) nor a computed uid (bizdir_uid is a plpgsql call per row; the read model
 * computes it from the id in JavaScript).
 *
 * Feed order is (xid, seq): a reader sees only events below the horizon (bizdir_events_horizon):
 * every transaction of this database below it has ended, so no event can later appear before one
 * already served. Every trigger is named `events_*`, so a benchmark can switch them off in its own
 * database to measure what they cost.
 */

/** API field names of an Org's columns, in the Org object's order (null: not shown by the API). */
const ORG_CHANGED = [
  ['description', 'description'],
  ['email', 'emails.default'],
  ['sic_code', 'industry.sic_code'],
  ['informal_name', 'informal_name'],
  ['logo_url', 'logo_url'],
  ['name', 'name'],
  ['phones', 'phones'],
  ['public_slug', 'public_domain'],
  ['registration_country', 'registration.country_code'],
  ['registration_date', 'registration.date'],
  ['registration_number', 'registration.number'],
  ['registration_state_code', 'registration.state_code'],
  ['registered_address_id', 'registration.address'],
  ['vat_number', 'vat.number'],
  // Not in the Org object, but what org.left_register reports and an Org back on the register undoes.
  ['left_register_on', 'left_register_on'],
] as const;

/** API field names of a Location's columns, in the Location object's order. */
const LOCATION_CHANGED = [
  ['address_id', 'address'],
  ['address_verified', 'address_verified'],
  ['code', 'code'],
  ['closed_date', 'closed_date'],
  ['is_default', 'default'],
  ['description', 'description'],
  ['email', 'emails.default'],
  ['hours', 'hours'],
  ['links', 'links'],
  ['name', 'name'],
  ['org_id', 'org_domain'],
  ['phones', 'phones'],
  ['public_slug', 'public_domain'],
  ['year_established', 'year_established'],
] as const;

/** An Address's postal fields: the same names in the table and the API. */
const ADDRESS_CHANGED = [
  'line1',
  'line2',
  'line3',
  'city',
  'sublocality',
  'state',
  'state_code',
  'zip',
  'country_code',
].map((c) => [c, c] as const);

/** `array['name', ...]` of the columns that differ between old row `o` and new row `n`, as a jsonb array. */
function changedList(columns: readonly (readonly [string, string])[]) {
  const items = columns.map(
    ([column, field]) => `case when n.${column} is distinct from o.${column} then '${field}' end`,
  );
  return `to_jsonb(array_remove(array[${items.join(', ')}]::text[], null))`;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table events (
      xid xid8 not null default pg_current_xact_id(),
      seq bigint generated always as identity,
      type text not null,
      created timestamptz not null default clock_timestamp(),
      org_id bigint,
      run_id bigint,
      data jsonb not null,
      primary key (xid, seq)
    )`.execute(db);
  // The feed's horizon: the oldest transaction of the reader's snapshot that may still write events
  // of this database. pg_snapshot_xmin alone would be the oldest running transaction of the whole
  // server, so a long transaction in another database (another application, a test) would hold the
  // feed back. A transaction in the snapshot's in-progress list is passed over only when the backend
  // activity (pg_stat_activity's function, without the view's joins), read after the snapshot, shows
  // it running in another database: a transaction
  // belongs to one database for its whole life, so it can never write here. One that ended in
  // between is not shown, and holds the horizon (its events, if any, are not in the snapshot) until
  // the next read. Capped at the reader's own transaction, if it has an id, so a reader never serves
  // events it has not committed. STABLE: the caller's statement snapshot, the one its scan reads.
  await sql`
    create function bizdir_events_horizon() returns xid8 language sql stable as $$
      select least(pg_snapshot_xmax(s), pg_current_xact_id_if_assigned(), (
        select min(x) from pg_snapshot_xip(s) x
        where x::xid not in (select a.backend_xid from pg_stat_get_activity(null) a
          where a.datid is distinct from (select oid from pg_database where datname = current_database())
            and a.backend_xid is not null)))
      from pg_current_snapshot() s
    $$`.execute(db);

  // import.completed names the first and last event of its run: two probes of this index.
  await sql`create index events_run on events (run_id, xid, seq) where run_id is not null`.execute(db);

  // Retention deletes the oldest events in feed order and remembers the last one it deleted: a
  // cursor before it has lost events (410), one at or after it has not. One row.
  await sql`
    create table events_retention (
      only_row boolean primary key default true check (only_row),
      deleted_xid xid8 not null default '0',
      deleted_seq bigint not null default 0,
      pruned_at timestamptz
    )`.execute(db);
  await sql`insert into events_retention default values`.execute(db);

  // An Address's events name its Org: found from the Address by these (one index probe per changed
  // Address, where a join would scan every Org). Both columns are set once per row and never move,
  // so the updates of an import stay HOT.
  await sql`create index orgs_registered_address_id on orgs (registered_address_id)`.execute(db);
  await sql`create index locations_address_id on locations (address_id)`.execute(db);

  // Orgs. A new Org's registered address is created with it (registrar.loader.ts insertOrgs, one
  // statement), so its address.created comes from here: the Address alone does not know its owner
  // yet when a Location's address is inserted before the Location. Lateral `limit 1` lookups keep
  // each one an index probe whatever the planner thinks of the transition table. Each trigger's
  // statement is an EXECUTE, planned for the statement at hand (migration 0021: a static query keeps
  // the plan of its session's first call, a one-row plan reused for a 5,000-row chunk). JIT is off in
  // them: a transition table has no statistics, so a 5,000-row join is estimated at 100,000s of rows,
  // past jit_above_cost, and compiling took far longer than the statement runs
  // (docs/journal/2026-11-29.md, 07:16).
  await sql`
    create function bizdir_events_orgs_inserted() returns trigger language plpgsql set jit = off as $$
    begin
      execute $q$
      insert into events (type, org_id, run_id, data)
      select e.type, e.org_id, e.run_id, e.data from (
        select n.id as k, 0 as part, 'org.created' as type, n.id as org_id, n.last_run_id as run_id,
          jsonb_build_object('cc', n.domain_cc, 'slug', n.public_slug, 'version_number', n.version_number) as data
        from new_rows n
        union all
        select n.id, 1, 'address.created', n.id, n.last_run_id,
          jsonb_build_object('id', a.id, 'cc', a.domain_cc, 'version_number', a.version_number, 'org_cc', n.domain_cc)
        from new_rows n
        cross join lateral (select id, domain_cc, version_number from addresses
          where id = n.registered_address_id limit 1) a
      ) e order by e.k, e.part $q$;
      return null;
    end $$`.execute(db);
  // An update is an event only when it moved version_number (an unchanged re-import, a refreshed
  // fingerprint, last_run_id: none); an Org given its first address gets that address's address.created.
  await sql`
    create function bizdir_events_orgs_updated() returns trigger language plpgsql set jit = off as $$
    begin
      execute $q$
      insert into events (type, org_id, run_id, data)
      select e.type, e.org_id, e.run_id, e.data from (
        select n.id as k, 0 as part,
          case when o.left_register_on is null and n.left_register_on is not null
            then 'org.left_register' else 'org.updated' end as type,
          n.id as org_id, n.last_run_id as run_id,
          jsonb_build_object('cc', n.domain_cc, 'slug', n.public_slug, 'version_number', n.version_number,
            'changed', ${sql.raw(changedList(ORG_CHANGED))})
          || case when o.left_register_on is null and n.left_register_on is not null
            then jsonb_build_object('left_register_on', n.left_register_on) else '{}' end as data
        from new_rows n join old_rows o on o.id = n.id
        where n.version_number is distinct from o.version_number
        union all
        select n.id, 1, 'address.created', n.id, n.last_run_id,
          jsonb_build_object('id', a.id, 'cc', a.domain_cc, 'version_number', a.version_number, 'org_cc', n.domain_cc)
        -- Only the Orgs whose address changed are probed (offset 0 keeps the filter before the probe).
        from (select n.* from new_rows n join old_rows o on o.id = n.id
          where n.registered_address_id is distinct from o.registered_address_id offset 0) n
        cross join lateral (select id, domain_cc, version_number from addresses
          where id = n.registered_address_id limit 1) a
      ) e order by e.k, e.part $q$;
      return null;
    end $$`.execute(db);

  // Locations. The location feed writes a changed Address before its Location (locations.write.ts),
  // so that Address's event could not name the run yet: the Location's statement, which carries the
  // run, gives it (and any other event of this transaction without one, such as an Org the sheet
  // created by name) its run. A probe of this transaction's events by primary key.
  await sql`
    create function bizdir_events_claim_run(run bigint) returns void language sql as $$
      update events set run_id = run
      where xid = pg_current_xact_id() and run_id is null and run is not null and type not like 'import.%'
    $$`.execute(db);
  await sql`
    create function bizdir_events_locations_inserted() returns trigger language plpgsql set jit = off as $$
    begin
      execute $q$
      insert into events (type, org_id, run_id, data)
      select e.type, e.org_id, e.run_id, e.data from (
        select n.id as k, 0 as part, 'location.created' as type, n.org_id, n.last_run_id as run_id,
          jsonb_build_object('uid', n.uid, 'cc', n.domain_cc, 'slug', n.public_slug,
            'version_number', n.version_number, 'org_cc', og.domain_cc) as data
        from new_rows n
        left join lateral (select domain_cc from orgs where id = n.org_id limit 1) og on true
        union all
        select n.id, 1, 'address.created', n.org_id, n.last_run_id,
          jsonb_build_object('id', a.id, 'cc', a.domain_cc, 'version_number', a.version_number,
            'org_cc', og.domain_cc, 'loc_uid', n.uid, 'loc_cc', n.domain_cc)
        from new_rows n
        cross join lateral (select id, domain_cc, version_number from addresses
          where id = n.address_id limit 1) a
        left join lateral (select domain_cc from orgs where id = n.org_id limit 1) og on true
      ) e order by e.k, e.part $q$;
      perform bizdir_events_claim_run((select max(last_run_id) from new_rows));
      return null;
    end $$`.execute(db);
  await sql`
    create function bizdir_events_locations_updated() returns trigger language plpgsql set jit = off as $$
    begin
      execute $q$
      insert into events (type, org_id, run_id, data)
      select e.type, e.org_id, e.run_id, e.data from (
        select n.id as k, 0 as part,
          case when o.closed_date is null and n.closed_date is not null
            then 'location.closed' else 'location.updated' end as type,
          n.org_id, n.last_run_id as run_id,
          jsonb_build_object('uid', n.uid, 'cc', n.domain_cc, 'slug', n.public_slug,
            'version_number', n.version_number, 'org_cc', og.domain_cc,
            'changed', ${sql.raw(changedList(LOCATION_CHANGED))}) as data
        from new_rows n join old_rows o on o.id = n.id
        left join lateral (select domain_cc from orgs where id = n.org_id limit 1) og on true
        where n.version_number is distinct from o.version_number
        union all
        select n.id, 1, 'address.created', n.org_id, n.last_run_id,
          jsonb_build_object('id', a.id, 'cc', a.domain_cc, 'version_number', a.version_number,
            'org_cc', og.domain_cc, 'loc_uid', n.uid, 'loc_cc', n.domain_cc)
        from (select n.* from new_rows n join old_rows o on o.id = n.id
          where n.address_id is distinct from o.address_id offset 0) n
        cross join lateral (select id, domain_cc, version_number from addresses
          where id = n.address_id limit 1) a
        left join lateral (select domain_cc from orgs where id = n.org_id limit 1) og on true
      ) e order by e.k, e.part $q$;
      perform bizdir_events_claim_run((select max(last_run_id) from new_rows));
      return null;
    end $$`.execute(db);

  // Addresses: created ones are reported by their owner (above); a bump is address.updated, naming
  // its Org (and Location) found through the two indexes made above. The register updates an Org
  // before its address (registrar.loader.ts), so the Org's last_run_id is this run's.
  await sql`
    create function bizdir_events_addresses_updated() returns trigger language plpgsql set jit = off as $$
    begin
      execute $q$
      insert into events (type, org_id, run_id, data)
      select 'address.updated', coalesce(og.id, l.org_id), og.last_run_id,
        jsonb_strip_nulls(jsonb_build_object('id', n.id, 'cc', n.domain_cc, 'version_number', n.version_number,
          'changed', ${sql.raw(changedList(ADDRESS_CHANGED))},
          'org_cc', coalesce(og.domain_cc, lo.domain_cc), 'loc_uid', l.uid, 'loc_cc', l.domain_cc))
      from new_rows n join old_rows o on o.id = n.id
      left join lateral (select id, domain_cc, last_run_id from orgs
        where registered_address_id = n.id limit 1) og on true
      left join lateral (select uid, domain_cc, org_id from locations
        where address_id = n.id and og.id is null limit 1) l on true
      left join lateral (select domain_cc from orgs where id = l.org_id limit 1) lo on true
      where n.version_number is distinct from o.version_number
      order by n.id $q$;
      return null;
    end $$`.execute(db);

  for (const [table, fn, when, transition] of [
    ['orgs', 'bizdir_events_orgs_inserted', 'insert', 'new table as new_rows'],
    ['orgs', 'bizdir_events_orgs_updated', 'update', 'old table as old_rows new table as new_rows'],
    ['locations', 'bizdir_events_locations_inserted', 'insert', 'new table as new_rows'],
    ['locations', 'bizdir_events_locations_updated', 'update', 'old table as old_rows new table as new_rows'],
    ['addresses', 'bizdir_events_addresses_updated', 'update', 'old table as old_rows new table as new_rows'],
  ] as const) {
    await sql`
      create trigger ${sql.id(`events_${when}`)} after ${sql.raw(when)} on ${sql.table(table)}
      referencing ${sql.raw(transition)}
      for each statement execute function ${sql.id(fn)}()`.execute(db);
  }

  // Import runs: started when a run goes to `running` (again, after a failure a stalled job lived
  // through), completed when it settles from `running`, with the run's counts and its first and last
  // record event (the ids are cursors, `<xid>-<seq>`: api/events/event-cursor.ts).
  await sql`
    create function bizdir_events_import_runs() returns trigger language plpgsql as $$
    declare
      first_id text;
      last_id text;
    begin
      if new.status = 'running' then
        insert into events (type, run_id, data) values ('import.started', new.id, jsonb_build_object(
          'run_id', new.id, 'feed', new.feed, 'full', coalesce((new.options->>'full')::boolean, false),
          'parts', new.parts));
      elsif old.status = 'running' and new.status in ('succeeded', 'failed') then
        select e.xid::text || '-' || e.seq into first_id from events e
          where e.run_id = new.id and e.type not like 'import.%' order by e.run_id, e.xid, e.seq limit 1;
        select e.xid::text || '-' || e.seq into last_id from events e
          where e.run_id = new.id and e.type not like 'import.%'
          order by e.run_id desc, e.xid desc, e.seq desc limit 1;
        insert into events (type, run_id, data) values ('import.completed', new.id, jsonb_build_object(
          'run_id', new.id, 'feed', new.feed, 'status', new.status,
          'full', coalesce((new.options->>'full')::boolean, false),
          'first_id', first_id, 'last_id', last_id,
          'counts', jsonb_build_object('rows_read', new.rows_read, 'inserted', new.inserted,
            'updated', new.updated, 'unchanged', new.unchanged, 'rejected', new.rejected,
            'closed', new.closed)));
      end if;
      return null;
    end $$`.execute(db);
  await sql`
    create trigger events_import_runs after update of status on import_runs
    for each row when (old.status is distinct from new.status)
    execute function bizdir_events_import_runs()`.execute(db);

  // Long polls (GET /v1/events?wait=) learn of new events at commit: one NOTIFY per transaction
  // that wrote any (Postgres folds repeats of one payload within a transaction).
  await sql`
    create function bizdir_events_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify('bizdir_events', '');
      return null;
    end $$`.execute(db);
  await sql`
    create trigger events_notify after insert on events
    for each statement execute function bizdir_events_notify()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger if exists events_import_runs on import_runs`.execute(db);
  for (const [table, when] of [
    ['orgs', 'insert'],
    ['orgs', 'update'],
    ['locations', 'insert'],
    ['locations', 'update'],
    ['addresses', 'update'],
  ] as const) {
    await sql`drop trigger if exists ${sql.id(`events_${when}`)} on ${sql.table(table)}`.execute(db);
  }
  // The table first: its own trigger (events_notify) goes with it, then nothing uses the functions.
  await sql`drop table if exists events_retention`.execute(db);
  await sql`drop table if exists events`.execute(db);
  for (const fn of [
    'bizdir_events_import_runs',
    'bizdir_events_orgs_inserted',
    'bizdir_events_orgs_updated',
    'bizdir_events_locations_inserted',
    'bizdir_events_locations_updated',
    'bizdir_events_addresses_updated',
    'bizdir_events_notify',
    'bizdir_events_horizon',
  ]) {
    await sql`drop function if exists ${sql.id(fn)}()`.execute(db);
  }
  await sql`drop function if exists bizdir_events_claim_run(bigint)`.execute(db);
  await sql`drop index if exists locations_address_id`.execute(db);
  await sql`drop index if exists orgs_registered_address_id`.execute(db);
}
