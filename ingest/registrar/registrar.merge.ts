import type { Transaction } from 'kysely';
import type { Db } from '../../shared/db.js';
import type { Database } from '../../shared/tables.js';
import { type ChunkPlan, type MergeOutcome, StaleStagedRowsError } from '../feed-handler.js';
import { addressHashes, updateAddresses } from './registrar.addresses.js';
import { labelsFor } from './registrar.labels.js';
import {
  type Ctx,
  findExisting,
  insertOrgs,
  type MergeCtx,
  type OrgChange,
  updateOrgs,
} from './registrar.orgs.js';
import { nextWinners, refreshFingerprints, stagedRecords, type Winner } from './registrar.stage.js';

/**
 * The register merge, one chunk of company numbers at a time, from a run's staged rows
 * (registrar.stage.ts): the plan (each number's winning row, whether its Org exists and is unchanged,
 * the new companies' labels) and the chunk's writes. Set-based per chunk: one query finds what exists,
 * then one statement per kind of write (new companies with their addresses and public labels, changed
 * Orgs, changed addresses: registrar.orgs.ts, registrar.addresses.ts), so the cost per row is a few
 * microseconds of SQL, not a round trip.
 */

/** A planned chunk: its winning rows and the labels of the new companies among them. */
export interface RegistrarChunkPlan extends ChunkPlan {
  winners: Winner[];
  /** The labels of the winners without an Org, in their order. */
  slugs: string[];
}

/**
 * Plans the next chunk of a run's staged rows (registrar.stage.ts): one row per company number, the
 * last one of the run, with whether its Org exists and is unchanged, and the public label of each
 * new company (handed out before the merge, registrar.labels.ts). Outside the chunk's transaction:
 * the staging table does not change while it is merged, and no other writer touches this register's
 * Orgs (the caller holds the register's lock).
 */
export async function planRegistrarChunk(
  db: Db,
  ctx: Ctx,
  after: string,
  upto: string | null,
): Promise<RegistrarChunkPlan | null> {
  const winners = await nextWinners(db, ctx.runId, ctx.country, after, upto);
  if (winners.length === 0) return null;
  const slugs = await labelsFor(
    db,
    ctx.runId,
    winners
      .filter((w) => !w.same && w.org_id === null)
      .map((w) => ({ number: w.number, base: w.slug ?? 'org', kept: w.label })),
  );
  return { last: winners.at(-1)!.number, winners, slugs };
}

/**
 * Merges a planned chunk into the Orgs. Each number is met once per run, so a changed Org is bumped
 * exactly once, and an unchanged one is never read into JavaScript (the stage query says so).
 */
export async function mergeRegistrarChunk(
  trx: Transaction<Database>,
  ctx: MergeCtx,
  plan: RegistrarChunkPlan,
): Promise<MergeOutcome> {
  const { winners } = plan;
  const byPart = new Map<number, { inserted: number; updated: number; unchanged: number }>();
  const tally = (partNo: number, k: 'inserted' | 'updated' | 'unchanged') => {
    const c = byPart.get(partNo) ?? { inserted: 0, updated: 0, unchanged: 0 };
    c[k]++;
    byPart.set(partNo, c);
  };
  const outcome: MergeOutcome = {
    inserted: 0,
    updated: 0,
    unchanged: 0,
    merged: winners.length,
    last: plan.last,
    changedOrgIds: [],
    byPart,
  };
  const todo = winners.filter((w) => {
    if (w.same) tally(w.part_no, 'unchanged');
    return !w.same;
  });
  outcome.unchanged = winners.length - todo.length;
  await refreshFingerprints(
    trx,
    ctx.runId,
    ctx.country,
    winners.filter((w) => w.same && w.refresh),
  );
  if (todo.length === 0) return outcome;
  const inserts = todo.filter((w) => w.org_id === null);
  for (const w of inserts) tally(w.part_no, 'inserted');
  // Changed companies are read back (they are compared field by field with what is stored).
  const staged = await stagedRecords(
    trx,
    ctx.runId,
    todo.filter((w) => w.org_id !== null),
  );
  const existing = await findExisting(
    trx,
    ctx.country,
    staged.map((s) => s.record.number),
  );
  const stale = [...existing.values()].filter((e) => e.address_id !== null);
  const hashes = await addressHashes(
    trx,
    stale.map((e) => e.address_id!),
  );
  for (const e of stale) e.address_hash = hashes.get(e.address_id!) ?? null;

  const orgChanges: OrgChange[] = [];
  const addressChanges: OrgChange[] = [];
  // Recognised unchanged while their part was read, changed since (another run of this register
  // merged in between): their fields were never read, so their parts must be read again.
  const outdated = staged.filter((r) => r.record.known);
  if (outdated.length > 0) throw new StaleStagedRowsError([...new Set(outdated.map((r) => r.part_no))]);
  for (const row of staged) {
    const rec = row.record;
    const found = existing.get(rec.number);
    // Gone since the stage query looked (not possible under the feed lock): nothing to compare with.
    if (!found) continue;
    const orgChanged = found.content_hash !== rec.orgHash || found.left_register_on !== null;
    const addressChanged = found.address_id !== null && found.address_hash !== rec.addressHash;
    if (!orgChanged && !addressChanged && found.address_id !== null) {
      tally(row.part_no, 'unchanged');
      outcome.unchanged++;
      continue;
    }
    const change = { existing: found, record: rec, bump: true };
    if (orgChanged || found.address_id === null) orgChanges.push(change);
    if (addressChanged) addressChanges.push(change);
    tally(row.part_no, 'updated');
    outcome.updated++;
  }
  const insertedIds = await insertOrgs(trx, inserts, plan.slugs, ctx);
  outcome.inserted = insertedIds.length;
  await updateOrgs(trx, orgChanges, ctx);
  await updateAddresses(trx, addressChanges);
  outcome.changedOrgIds = [...insertedIds, ...orgChanges.map((c) => c.existing.id)];
  return outcome;
}
