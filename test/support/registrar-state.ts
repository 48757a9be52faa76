import { sql } from 'kysely';
import type { Db } from '../../shared/db.js';

/** Everything a clean import decides, keyed by company number (ids and timestamps aside). */
export async function registerState(db: Db) {
  const { rows } = await sql<Record<string, unknown>>`
    select o.registration_number, o.name, o.informal_name, o.public_slug, o.sic_code, o.registration_date,
      o.company_status, o.company_category, o.left_register_on, o.version_number, o.domain_cc,
      a.line1, a.line2, a.line3, a.city, a.state, a.zip, a.country_code, a.version_number as address_version,
      (select array_agg(slug order by slug) from (select slug from org_public_domains d where d.org_id = o.id
        union select o.public_slug) s) as slugs
    from orgs o left join addresses a on a.id = o.registered_address_id
    order by o.registration_number`.execute(db);
  return rows;
}
