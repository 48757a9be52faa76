import { type Kysely, sql } from 'kysely';

// Frozen: a migration never imports app code and is never edited after it has landed.

/** The two label scopes: the records whose `public_slug` is the current label, and the labels table. */
const SCOPES = [
  { records: 'orgs', labels: 'org_public_domains', owner: 'org_id', key: 'org_public_domains_one_owner' },
  {
    records: 'locations',
    labels: 'location_public_domains',
    owner: 'location_id',
    key: 'location_public_domains_one_owner',
  },
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  // Until now a labels table held every public label a record had: its current one (also in the
  // record's unique `public_slug`) and its former ones. A first register import wrote each new Org's
  // label twice: a heap row and two btree entries more per company, the slug key in random order.
  // Without that write a first import's merge is faster and writes far less WAL
  // (docs/journal/2026-11-25.md, 23:31).
  //
  // From here on a labels table holds the labels its records held BEFORE (aliases kept after a
  // rename); the current label is the record's `public_slug`. Lookups by label already read both.
  // The rows that only repeat a current label are deleted (the labels stay in `public_slug`).
  for (const s of SCOPES) {
    await sql
      .raw(
        `delete from ${s.labels} d using ${s.records} r where r.id = d.${s.owner} and r.public_slug = d.slug`,
      )
      .execute(db);
  }

  // One label, one owner, across both places: the two unique keys each cover one of them, these
  // statement-level checks the pairs (a record's current label held before by another record, a
  // former label that is another record's current one). One EXECUTE per statement (planned for its
  // rows, see 0021), raising a unique violation under its own name. Like 0016's checks, they do not
  // see a conflicting row another transaction has not committed yet; labels are handed out under an
  // advisory lock from counters that only grow (ingest/public-domains.ts), which is what keeps two
  // writers apart.
  for (const s of SCOPES) {
    const raise = (what: string) => `
        raise exception using errcode = 'unique_violation', constraint = '${s.key}',
          message = 'a public label of ${s.records} is held by another record (${what})';`;
    await sql
      .raw(`
      create function bizdir_${s.records}_label_owner_check() returns trigger language plpgsql as $$
      declare
        found_bad boolean;
      begin
        if TG_OP = 'INSERT' then
          execute $q$ select exists (select 1 from new_rows n
            join ${s.labels} d on d.slug = n.public_slug and d.${s.owner} <> n.id) $q$ into found_bad;
        else
          execute $q$ select exists (select 1 from new_rows n
            join old_rows o on o.id = n.id and o.public_slug <> n.public_slug
            join ${s.labels} d on d.slug = n.public_slug and d.${s.owner} <> n.id) $q$ into found_bad;
        end if;
        if found_bad then${raise('current label')}
        end if;
        return null;
      end $$`)
      .execute(db);
    await sql
      .raw(`
      create function bizdir_${s.labels}_owner_check() returns trigger language plpgsql as $$
      declare
        found_bad boolean;
      begin
        execute $q$ select exists (select 1 from new_rows n
          join ${s.records} r on r.public_slug = n.slug and r.id <> n.${s.owner}) $q$ into found_bad;
        if found_bad then${raise('former label')}
        end if;
        return null;
      end $$`)
      .execute(db);
    await sql
      .raw(`create trigger ${s.records}_label_owner_insert after insert on ${s.records}
        referencing new table as new_rows for each statement execute function bizdir_${s.records}_label_owner_check()`)
      .execute(db);
    await sql
      .raw(`create trigger ${s.records}_label_owner_update after update on ${s.records}
        referencing old table as old_rows new table as new_rows
        for each statement execute function bizdir_${s.records}_label_owner_check()`)
      .execute(db);
    for (const event of ['insert', 'update']) {
      await sql
        .raw(`create trigger ${s.labels}_owner_${event} after ${event} on ${s.labels}
          referencing new table as new_rows for each statement execute function bizdir_${s.labels}_owner_check()`)
        .execute(db);
    }
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const s of SCOPES) {
    for (const [trigger, table] of [
      [`${s.records}_label_owner_insert`, s.records],
      [`${s.records}_label_owner_update`, s.records],
      [`${s.labels}_owner_insert`, s.labels],
      [`${s.labels}_owner_update`, s.labels],
    ]) {
      await sql.raw(`drop trigger if exists ${trigger} on ${table}`).execute(db);
    }
    await sql.raw(`drop function if exists bizdir_${s.records}_label_owner_check()`).execute(db);
    await sql.raw(`drop function if exists bizdir_${s.labels}_owner_check()`).execute(db);
    // Every current label back in the labels table, as before.
    await sql
      .raw(`insert into ${s.labels} (slug, ${s.owner}) select public_slug, id from ${s.records}
        on conflict (slug) do nothing`)
      .execute(db);
  }
}
