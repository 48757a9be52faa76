import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

export async function up(db: Kysely<unknown>): Promise<void> {
  // The fingerprint of the register row (with its file's header) an Org was last written from or
  // found unchanged by. A re-import that meets the same row text again knows the Org is unchanged
  // without splitting, normalizing or hashing its fields. Null when that row produced warnings (they
  // are reported again) and for Orgs not from the register.
  await sql`alter table orgs add column source_fingerprint text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table orgs drop column if exists source_fingerprint`.execute(db);
}
