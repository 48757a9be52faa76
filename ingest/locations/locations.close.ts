import { sql, type Transaction } from 'kysely';
import type { Database, ImportRunFirstsTable } from '../../shared/tables.js';
import { bulkRows, type PgArrayOf } from '../bulk-rows.js';
import type { FinishOutcome } from '../feed-handler.js';
import { checkGone, MIN_GUARDED_GONE } from '../full-guard.js';
import { deleteRunKeys } from '../import-runs/import-run-keys.repository.js';
import { holdRunningRun } from '../import-runs/run-fence.repository.js';

/**
 * The end of a run: a `--full` sheet is each of its Orgs' whole list, so their open Locations it did
 * not name close; then each Org's one default Location is settled. The first row of each Org in a
 * `--full` sheet is recorded as the batches go (recordFirstRows), since the default follows it.
 */

type Trx = Transaction<Database>;

/**
 * Closes what a run left open and settles defaults, for the Orgs the run met (its recorded keys) and
 * the `--org` Org (which may have had no row at all); then drops the run's keys and first rows.
 */
export async function finishRun(
  trx: Trx,
  runId: number,
  options: { full: boolean; fallbackOrgId: number | undefined; maxGonePercent?: number | undefined },
): Promise<FinishOutcome> {
  // Before the keys are read: a run failed for good meanwhile has lost them (run-fence.repository.ts).
  await holdRunningRun(trx, runId);
  const met = await runOrgIds(trx, runId);
  const orgIds = [
    ...new Set([...met, ...(options.fallbackOrgId !== undefined ? [options.fallbackOrgId] : [])]),
  ];
  const closedOrgs = options.full ? await closeMissing(trx, orgIds, runId, options.maxGonePercent) : [];
  const defaultOrgs = await settleDefaults(trx, orgIds, runId);
  await deleteFirstRows(trx, runId);
  await deleteRunKeys(trx, runId);
  return { closed: closedOrgs.length, changedOrgIds: [...new Set([...closedOrgs, ...defaultOrgs])] };
}

/**
 * A Location the run created: its key was met, though not recorded (createdByRun in
 * locations.match.ts, and recordBatchKeys there).
 */
const createdByRun = (runId: number) =>
  sql<boolean>`(l.last_run_id = ${runId}::bigint and l.version_number = 1)`;

/** The Orgs the run met: those of the keys (`org:code`, import_run_keys) it recorded and of the Locations it created. */
export async function runOrgIds(trx: Trx, runId: number): Promise<number[]> {
  const { rows } = await sql<{ org_id: number }>`
    select split_part(key, ':', 1)::bigint as org_id from import_run_keys where run_id = ${runId}::bigint
    union
    select l.org_id from locations l where ${createdByRun(runId)}`.execute(trx);
  return rows.map((r) => r.org_id);
}

/**
 * `--full`: the Orgs' open Locations whose (org, code) key the run did not meet (record, or create a
 * Location for) close on the import date (UTC). Refused rows record their key too, so a typo does not
 * close a Location.
 * Closing more than `--max-gone` of those Orgs' open Locations fails the run and closes none (full-guard.ts).
 * Returns the Orgs that lost a Location.
 */
export async function closeMissing(
  trx: Trx,
  orgIds: readonly number[],
  runId: number,
  maxGonePercent?: number,
): Promise<number[]> {
  if (orgIds.length === 0) return [];
  const rows = await trx
    .updateTable('locations as l')
    .set((eb) => ({
      closed_date: sql<string>`(now() at time zone 'UTC')::date`,
      version_number: eb('l.version_number', '+', 1),
      updated: sql<Date>`now()`,
      last_run_id: runId,
    }))
    .where('l.org_id', '=', anyOf(orgIds))
    .where('l.closed_date', 'is', null)
    .where(sql<boolean>`not ${createdByRun(runId)}`)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('import_run_keys as k')
            .select('k.run_id')
            .where('k.run_id', '=', runId)
            .where('k.key', '=', sql<string>`l.org_id || ':' || l.code`),
        ),
      ),
    )
    .returning('l.org_id')
    .execute();
  if (rows.length >= MIN_GUARDED_GONE) {
    // Closed and still open: the named Orgs' open Locations before this step (full-guard.ts).
    const left = await trx
      .selectFrom('locations')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('org_id', '=', anyOf(orgIds))
      .where('closed_date', 'is', null)
      .executeTakeFirstOrThrow();
    const open = rows.length + Number(left.n);
    checkGone(
      rows.length,
      open,
      (n) => `of the ${n} open Locations of the Orgs the sheet names`,
      maxGonePercent,
    );
  }
  return rows.map((r) => r.org_id);
}

/** A row of a `--full` sheet that names a Location of an Org: `line` orders the Org's Locations. */
export interface FirstRow {
  orgId: number;
  code: string;
  line: number;
}

/** Of some rows, each Org's first (lowest line). */
export function firstRowPerOrg(rows: readonly FirstRow[]): FirstRow[] {
  const first = new Map<number, FirstRow>();
  for (const r of rows) {
    const seen = first.get(r.orgId);
    if (!seen || r.line < seen.line) first.set(r.orgId, r);
  }
  return [...first.values()];
}

/**
 * `--full` runs: the first row (lowest line) of each Org in this batch; the first batch that names an
 * Org keeps its row (batches come in sheet order, so that is the Org's first row in the sheet).
 */
export async function recordFirstRows(trx: Trx, runId: number, rows: readonly FirstRow[]): Promise<void> {
  const picked = firstRowPerOrg(rows).map((r) => ({
    run_id: runId,
    org_id: r.orgId,
    code: r.code,
    line: r.line,
  }));
  if (picked.length === 0) return;
  await trx
    .insertInto('import_run_firsts')
    .columns(['run_id', 'org_id', 'code', 'line'])
    .expression((eb) =>
      eb.selectFrom(bulkRows('v', FIRST_ROW, picked)).select(['v.run_id', 'v.org_id', 'v.code', 'v.line']),
    )
    .onConflict((oc) => oc.columns(['run_id', 'org_id']).doNothing())
    .execute();
}

/** An import_run_firsts row as bulkRows sends it. */
const FIRST_ROW = {
  run_id: 'bigint',
  org_id: 'bigint',
  code: 'text',
  line: 'integer',
} as const satisfies Record<keyof ImportRunFirstsTable, PgArrayOf>;

export async function deleteFirstRows(trx: Trx, runId: number): Promise<void> {
  await trx.deleteFrom('import_run_firsts').where('run_id', '=', runId).execute();
}

/**
 * Settles each Org's one default Location at the end of a run:
 * 1. after a `--full` sheet, the Org's first open Location in that sheet (the sheet is its whole
 *    list, so its order counts);
 * 2. else the current default, while it is open (a partial sheet does not move it);
 * 3. else the Org's open Location created first (ids follow sheet order).
 * A Location whose `default` flips is a changed record, bumped once: not again if this run already
 * wrote it. Unset first, then set, so the one-default-per-Org index never sees two.
 */
export async function settleDefaults(trx: Trx, orgIds: readonly number[], runId: number): Promise<number[]> {
  if (orgIds.length === 0) return [];
  const { rows: wanted } = await sql<{ id: number }>`
    with orgs(id) as (select unnest(${orgIds}::bigint[])),
    open_locations as (select l.id, l.org_id, l.code, l.is_default from locations l
      where l.org_id = any(${orgIds}::bigint[]) and l.closed_date is null),
    firsts as (select o.org_id, o.id from import_run_firsts f
      join open_locations o on o.org_id = f.org_id and o.code = f.code where f.run_id = ${runId}::bigint),
    current_default as (select org_id, id from open_locations where is_default),
    earliest as (select org_id, min(id) as id from open_locations group by org_id)
    select coalesce(f.id, c.id, e.id) as id from orgs
      left join firsts f on f.org_id = orgs.id left join current_default c on c.org_id = orgs.id
      left join earliest e on e.org_id = orgs.id
    where coalesce(f.id, c.id, e.id) is not null`.execute(trx);
  const want = wanted.map((r) => r.id);
  const unset = await trx
    .updateTable('locations as l')
    .set({ is_default: false, ...bumpOnce(runId) })
    .where('l.org_id', '=', anyOf(orgIds))
    .where('l.is_default', '=', true)
    .where('l.id', '<>', sql<number>`all(${want}::bigint[])`)
    .returning('l.org_id')
    .execute();
  const set = await trx
    .updateTable('locations as l')
    .set({ is_default: true, ...bumpOnce(runId) })
    .where('l.id', '=', anyOf(want))
    .where('l.is_default', '=', false)
    .returning('l.org_id')
    .execute();
  return [...unset, ...set].map((r) => r.org_id);
}

/** `= any($1::bigint[])`: one bind parameter for the whole list, whatever its length. */
const anyOf = (ids: readonly number[]) => sql<number>`any(${ids}::bigint[])`;

/** A changed Location's bookkeeping, bumped once per run: not again if this run already wrote it. */
const bumpOnce = (runId: number) => ({
  version_number: sql<number>`l.version_number + (case when l.last_run_id = ${runId}::bigint then 0 else 1 end)`,
  updated: sql<Date>`case when l.last_run_id = ${runId}::bigint then l.updated else now() end`,
  last_run_id: runId,
});
