import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // An account's optional rate limit: at most `rate_limit_requests` requests per
  // `rate_limit_seconds` seconds, shared by all its keys and counted in Redis by every API process.
  // Both unset: no limit.
  await sql`
    alter table accounts
      add column rate_limit_requests integer check (rate_limit_requests > 0),
      add column rate_limit_seconds integer check (rate_limit_seconds > 0),
      add constraint accounts_rate_limit_both
        check ((rate_limit_requests is null) = (rate_limit_seconds is null))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table accounts
      drop constraint if exists accounts_rate_limit_both,
      drop column if exists rate_limit_requests,
      drop column if exists rate_limit_seconds`.execute(db);
}
