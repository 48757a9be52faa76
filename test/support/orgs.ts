import { sql } from 'kysely';
import { keepFormerSlugs } from '../../ingest/public-domains.js';
import type { Db } from '../../shared/db.js';
import { slugify } from '../../shared/domains.js';
import { uidOf } from '../../shared/org-domains.read-model.js';

export interface TestOrg {
  id: number;
  uid: string;
  slug: string;
  name: string;
}

let counter = 0;

/**
 * Inserts Orgs straight into the real schema (search tests need names, not feeds); each gets a
 * unique public label, its `public_slug` (as the importers do: the labels table holds former labels).
 */
export async function insertOrgs(
  db: Db,
  orgs: readonly { name: string; updated?: Date; slug?: string }[],
): Promise<TestOrg[]> {
  const out: TestOrg[] = [];
  for (const org of orgs) {
    const slug = org.slug ?? `${slugify(org.name)}-t${++counter}`;
    const row = await db
      .insertInto('orgs')
      .values({
        domain_cc: 'gb',
        public_slug: slug,
        name: org.name,
        content_hash: `h${counter}`,
        ...(org.updated ? { updated: sql`${org.updated.toISOString()}::timestamptz` } : {}),
      })
      .returning(['id', uidOf('orgs').as('uid')])
      .executeTakeFirstOrThrow();
    out.push({ id: row.id, uid: row.uid, slug, name: org.name });
  }
  return out;
}

/** A rename as the importer does it: new name, version + 1, new `updated`, the old label kept as an alias. */
export async function renameOrg(db: Db, id: number, name: string): Promise<string> {
  const slug = `${slugify(name)}-r${++counter}`;
  await db.transaction().execute(async (trx) => {
    await keepFormerSlugs(trx, 'org', [{ ownerId: id, slug }]);
    await trx
      .updateTable('orgs')
      .set({ name, public_slug: slug, version_number: sql`version_number + 1`, updated: sql`now()` })
      .where('id', '=', id)
      .execute();
  });
  return slug;
}
