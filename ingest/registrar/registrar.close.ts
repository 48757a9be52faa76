import { sql, type Transaction } from 'kysely';
import type { Database } from '../../shared/tables.js';
import { checkGone, MIN_GUARDED_GONE } from '../full-guard.js';
import type { Ctx } from './registrar.orgs.js';
import { stageTableOf } from './registrar.stage.js';

/**
 * `--full`: every Org of the register country that no part of the run holds has left the register.
 * A part holds a company by an accepted row (staged) or by a rejected row whose company number could be
 * read (import_rejects.record_key, registrar.normalize.ts readableCompanyNumber): that row is in the
 * file, only not loadable, so its Org is left as it was, neither merged nor marked. Nothing is
 * deleted; an Org that comes back later is cleared by updateOrgs (its hash check sees
 * left_register_on set). Runs after every part has been read and merged, in the run's last transaction.
 * Marking more than `--max-gone` of the register fails the run and marks none (full-guard.ts).
 */
export async function closeMissingOrgs(trx: Transaction<Database>, ctx: Ctx, maxGonePercent?: number) {
  const { rows } = await sql<{ id: number }>`
    update orgs o set left_register_on = current_date, version_number = o.version_number + 1,
      updated = now(), last_run_id = ${ctx.runId}::bigint
    where o.registration_country = ${ctx.country} and o.registration_number is not null
      and o.left_register_on is null
      and not exists (select 1 from ${sql.table(stageTableOf(ctx.runId))} s where s.number = o.registration_number)
      -- The run's rejects (found by the run's index; a few, not a scan per Org).
      and not exists (select 1 from import_rejects r
        where r.run_id = ${ctx.runId}::bigint and r.record_key = o.registration_number)
    returning o.id`.execute(trx);
  const ids = rows.map((r) => Number(r.id));
  if (ids.length >= MIN_GUARDED_GONE) {
    // Marked and still open: the register's open companies before this step (full-guard.ts).
    const { rows: left } = await sql<{ n: string }>`
      select count(*) as n from orgs
      where registration_country = ${ctx.country} and registration_number is not null
        and left_register_on is null`.execute(trx);
    const open = ids.length + Number(left[0]?.n ?? 0);
    checkGone(ids.length, open, (n) => `of the register's ${n} open companies`, maxGonePercent);
  }
  return { closed: ids.length, changedOrgIds: ids };
}
