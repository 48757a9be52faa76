import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // Stable ids: a Feistel permutation of the 40-bit identity value, written as 8 base-36
  // characters. A permutation cannot collide, identities are never handed out twice (not even
  // after a rollback), so an id is assigned once and never reused, and it does not leak row counts.
  await sql`
    create function bizdir_uid(n bigint) returns text
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

  await sql`
    create table addresses (
      id bigint generated always as identity primary key,
      uid text generated always as (bizdir_uid(id)) stored not null unique,
      domain_cc text not null check (domain_cc ~ '^[a-z]{2}$'),
      line1 text, line2 text, line3 text,
      city text, sublocality text, state text, state_code text, zip text,
      country_code text check (country_code ~ '^[A-Z]{2}$'),
      content_hash text not null,
      version_number integer not null default 1,
      updated timestamptz not null default now(),
      created_at timestamptz not null default now()
    )`.execute(db);

  await sql`
    create table orgs (
      id bigint generated always as identity primary key,
      uid text generated always as (bizdir_uid(id)) stored not null unique,
      -- the <cc> of the stable domain, fixed at creation; for registered Orgs also the registration country
      domain_cc text not null check (domain_cc ~ '^[a-z]{2}$'),
      public_slug text not null unique,
      name text not null,
      informal_name text,
      description text,
      email text,
      logo_url text,
      phones jsonb not null default '{}'::jsonb,
      sic_code text,
      vat_number text,
      registration_country text check (registration_country ~ '^[A-Z]{2}$'),
      registration_number text,
      registration_date date,
      registration_state_code text,
      registered_address_id bigint references addresses (id),
      company_status text,
      company_category text,
      left_register_on date,
      content_hash text not null,
      version_number integer not null default 1,
      updated timestamptz not null default now(),
      created_at timestamptz not null default now(),
      last_run_id bigint,
      check ((registration_number is null) = (registration_country is null))
    )`.execute(db);
  await sql`create unique index orgs_registration_key on orgs (registration_country, registration_number)
            where registration_number is not null`.execute(db);
  await sql`create index orgs_name_key on orgs (domain_cc, lower(name)) where registration_number is null`.execute(
    db,
  );

  // Every public domain label an Org ever had; the current one is orgs.public_slug. Old labels keep
  // resolving to their Org after a rename and are never handed to another Org.
  await sql`
    create table org_public_domains (
      slug text primary key,
      org_id bigint not null references orgs (id),
      created_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index org_public_domains_org on org_public_domains (org_id)`.execute(db);

  await sql`
    create table locations (
      id bigint generated always as identity primary key,
      uid text generated always as (bizdir_uid(id)) stored not null unique,
      domain_cc text not null check (domain_cc ~ '^[a-z]{2}$'),
      public_slug text not null unique,
      org_id bigint not null references orgs (id),
      code text not null,
      name text,
      description text,
      address_id bigint references addresses (id),
      address_verified boolean not null default false,
      closed_date date,
      is_default boolean not null default false,
      position integer not null default 0,
      email text,
      phones jsonb not null default '{}'::jsonb,
      hours jsonb not null default '{}'::jsonb,
      links jsonb not null default '{}'::jsonb,
      year_established integer,
      latitude double precision,
      longitude double precision,
      primary_category text,
      categories text[],
      labels text[],
      logo_url text,
      content_hash text not null,
      version_number integer not null default 1,
      updated timestamptz not null default now(),
      created_at timestamptz not null default now(),
      last_run_id bigint,
      unique (org_id, code)
    )`.execute(db);
  await sql`create unique index locations_one_default on locations (org_id) where is_default`.execute(db);

  await sql`
    create table location_public_domains (
      slug text primary key,
      location_id bigint not null references locations (id),
      created_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index location_public_domains_location on location_public_domains (location_id)`.execute(
    db,
  );

  // Clash counters for public domain labels: (scope, base) -> the last clash number handed out.
  await sql`
    create table public_slug_counters (
      scope text not null,
      base text not null,
      last integer not null,
      primary key (scope, base)
    )`.execute(db);

  await sql`
    create table import_runs (
      id bigint generated always as identity primary key,
      feed text not null check (feed in ('registrar', 'locations')),
      source text not null,
      options jsonb not null default '{}'::jsonb,
      status text not null default 'queued'
        check (status in ('queued', 'running', 'succeeded', 'failed', 'skipped')),
      job_id text,
      schedule_name text,
      rows_read bigint not null default 0,
      inserted bigint not null default 0,
      updated bigint not null default 0,
      unchanged bigint not null default 0,
      rejected bigint not null default 0,
      warnings bigint not null default 0,
      duplicates bigint not null default 0,
      closed bigint not null default 0,
      checkpoint_rows bigint not null default 0,
      bytes_read bigint not null default 0,
      bytes_total bigint,
      error text,
      created_at timestamptz not null default now(),
      started_at timestamptz,
      finished_at timestamptz
    )`.execute(db);
  await sql`create index import_runs_feed_created on import_runs (feed, created_at desc)`.execute(db);

  await sql`
    create table import_rejects (
      id bigint generated always as identity primary key,
      run_id bigint not null references import_runs (id),
      severity text not null check (severity in ('rejected', 'warning')),
      line_number bigint not null,
      column_name text,
      reason text not null,
      raw text
    )`.execute(db);
  await sql`create index import_rejects_run on import_rejects (run_id, line_number)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'import_rejects',
    'import_runs',
    'public_slug_counters',
    'location_public_domains',
    'locations',
    'org_public_domains',
    'orgs',
    'addresses',
  ]) {
    await sql`drop table if exists ${sql.table(table)}`.execute(db);
  }
  await sql`drop function if exists bizdir_uid(bigint)`.execute(db);
}
