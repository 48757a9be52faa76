import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table accounts (
      id bigint generated always as identity primary key,
      uid text generated always as (bizdir_uid(id)) stored not null unique,
      name text not null,
      created_at timestamptz not null default now()
    )`.execute(db);

  // One subscription per account (docs/decisions.md, Accounts, credits and usage): `credits` per period, periods start on the anchor
  // day of each calendar month (clamped to the month's last day).
  await sql`
    create table subscriptions (
      id bigint generated always as identity primary key,
      uid text generated always as (bizdir_uid(id)) stored not null unique,
      account_id bigint not null unique references accounts (id),
      credits integer not null check (credits >= 0),
      anchor_date date not null,
      created_at timestamptz not null default now()
    )`.execute(db);

  // Only a hash of a key is stored. `prefix` is the public start of the key, used to find the row
  // (then the hash is compared in constant time) and to name the key when revoking it.
  await sql`
    create table api_keys (
      id bigint generated always as identity primary key,
      account_id bigint not null references accounts (id),
      prefix text not null unique,
      hash bytea not null,
      created_at timestamptz not null default now(),
      revoked_at timestamptz
    )`.execute(db);
  await sql`create index api_keys_account on api_keys (account_id)`.execute(db);

  // The durable usage ledger: credits used per subscription period. Redis holds the fast counters;
  // this row is the truth they are rebuilt from, and its guard (used <= credits) is the last word.
  await sql`
    create table usage_periods (
      subscription_id bigint not null references subscriptions (id),
      period_start timestamptz not null,
      used integer not null default 0 check (used >= 0),
      updated_at timestamptz not null default now(),
      primary key (subscription_id, period_start)
    )`.execute(db);

  // One call per batch of served requests (group commit): adds up to `n` credits per period without
  // passing `lim`, and says how many it accepted. Rows are locked in the order given; callers sort.
  await sql`
    create function bizdir_charge(subs bigint[], periods timestamptz[], ns int[], lims int[])
    returns table (subscription_id bigint, period_start timestamptz, accepted int, used int)
    language plpgsql as $$
    declare
      i int;
      old_used int;
      new_used int;
    begin
      for i in 1..coalesce(array_length(subs, 1), 0) loop
        insert into usage_periods as u (subscription_id, period_start, used)
        values (subs[i], periods[i], 0) on conflict do nothing;
        select u.used into old_used from usage_periods u
        where u.subscription_id = subs[i] and u.period_start = periods[i] for update;
        new_used := greatest(old_used, least(lims[i], old_used + ns[i]));
        update usage_periods u set used = new_used, updated_at = now()
        where u.subscription_id = subs[i] and u.period_start = periods[i];
        subscription_id := subs[i];
        period_start := periods[i];
        accepted := new_used - old_used;
        used := new_used;
        return next;
      end loop;
    end $$`.execute(db);

  // Private per account; an email the account already has is not stored twice.
  await sql`
    create table contacts (
      id bigint generated always as identity primary key,
      uid text generated always as (bizdir_uid(id)) stored not null unique,
      account_id bigint not null references accounts (id),
      email_key text,
      first_name text,
      last_name text,
      data jsonb not null,
      created_at timestamptz not null default now()
    )`.execute(db);
  await sql`create unique index contacts_account_email on contacts (account_id, email_key)
            where email_key is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop function if exists bizdir_charge(bigint[], timestamptz[], int[], int[])`.execute(db);
  for (const table of ['contacts', 'usage_periods', 'api_keys', 'subscriptions', 'accounts']) {
    await sql`drop table if exists ${sql.table(table)}`.execute(db);
  }
}
