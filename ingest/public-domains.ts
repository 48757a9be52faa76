import { sql, type Transaction } from 'kysely';
import type { Db } from '../shared/db.js';
import { slugWithClash } from '../shared/domains.js';
import type { Database } from '../shared/tables.js';
import { bulkRows } from './bulk-rows.js';

export type SlugScope = 'org' | 'location';

/**
 * Where a scope's labels live: the current one is the record's `public_slug` (RECORDS), the ones it
 * held before a rename stay in the labels table (TABLE) as aliases (migration 0022).
 */
const TABLE = { org: 'org_public_domains', location: 'location_public_domains' } as const;
const OWNER = { org: 'org_id', location: 'location_id' } as const;
const RECORDS = { org: 'orgs', location: 'locations' } as const;

/** The labels records of `scope` hold, current and former, as a subquery of `(slug, owner)`. */
export const heldLabels = (scope: SlugScope) => sql`(
  select slug, ${sql.ref(OWNER[scope])} as owner from ${sql.table(TABLE[scope])}
  union all select public_slug, id from ${sql.table(RECORDS[scope])})`;

/**
 * Labels handed out but not recorded yet, among `candidates` (see reserveSlugs): allocateSlugs treats
 * them as taken. Called synchronously, so the caller can check and claim in one step.
 */
export type AlsoTaken = (candidates: readonly string[]) => Iterable<string>;

export interface SlugRequest {
  /** The slugified name (see slugify). */
  base: string;
  /** Set for a record that exists already (a rename): a label it held before is given back. */
  ownerId?: number;
}

/**
 * Moves the counters of `counts`' bases on by their counts and returns each base's new last number,
 * and whether its counter is new (`fresh`: no label of that base was ever handed out). A counter is
 * made with its first count and only grows, so it is new exactly when its last number is this
 * batch's count.
 */
async function moveCounters(
  trx: Transaction<Database>,
  scope: SlugScope,
  counts: ReadonlyMap<string, number>,
): Promise<{ base: string; last: number; fresh: boolean }[]> {
  const bases = [...counts.keys()];
  const rows = await trx
    .insertInto('public_slug_counters')
    .columns(['scope', 'base', 'last'])
    .expression((eb) =>
      eb
        .selectFrom(
          bulkRows(
            'b',
            { base: 'text', n: 'integer' },
            bases.map((base) => ({ base, n: counts.get(base)! })),
          ),
        )
        .select([eb.val(scope).as('scope'), 'b.base', 'b.n']),
    )
    .onConflict((oc) =>
      oc
        .columns(['scope', 'base'])
        .doUpdateSet({ last: sql<number>`public_slug_counters.last + excluded.last` }),
    )
    .returning(['base', 'last'])
    .execute();
  return rows.map((row) => {
    const last = Number(row.last);
    return { base: row.base, last, fresh: last === counts.get(row.base) };
  });
}

/**
 * Whether `slug`, handed out now for `base`, may be held already. Every label is `base` or
 * `base-<n>` for the base and number its counter gave (slugWithClash), so the plain label of a base
 * whose counter is new was never handed out as that base's label; it can be another base's clash
 * label only if it ends in `-<digits>` (`acme-2` is ACME's second label and ACME 2's first).
 */
function mayBeHeld(slug: string, base: string, fresh: ReadonlySet<string>): boolean {
  return slug !== base || !fresh.has(base) || /-\d+$/.test(base);
}

/**
 * Hands out public domain labels for a batch: `base`, then `base-2`, `base-3`, ... A label is never
 * handed out twice: current labels are the records' `public_slug`, and a renamed record's former
 * labels stay in the labels table as aliases (keepFormerSlugs). A transaction-level advisory lock
 * serialises allocators of one scope, so two imports at once cannot pick the same label; it is held
 * until the caller's transaction ends, which must also write the labels (as `public_slug`).
 */
export async function allocateSlugs(
  trx: Transaction<Database>,
  scope: SlugScope,
  requests: readonly SlugRequest[],
  alsoTaken?: AlsoTaken,
): Promise<string[]> {
  const out = new Array<string>(requests.length);
  if (requests.length === 0) return out;
  await sql`select pg_advisory_xact_lock(hashtext(${`bizdir:slugs:${scope}`}))`.execute(trx);

  // A renamed record that once held a label for its new name gets that label back.
  const owners = [...new Set(requests.flatMap((r) => (r.ownerId === undefined ? [] : [r.ownerId])))];
  const pending: number[] = [];
  if (owners.length > 0) {
    const held = await sql<{ slug: string; owner: number }>`
      select slug, owner from ${heldLabels(scope)} h where owner = any(${owners}::bigint[])`.execute(trx);
    const byOwner = new Map<number, string[]>();
    for (const row of held.rows) byOwner.set(row.owner, [...(byOwner.get(row.owner) ?? []), row.slug]);
    requests.forEach((r, i) => {
      const mine = r.ownerId === undefined ? undefined : byOwner.get(r.ownerId);
      const reuse = mine?.find((s) => s === r.base || new RegExp(`^${r.base}-\\d+$`).test(s));
      if (reuse) out[i] = reuse;
      else pending.push(i);
    });
  } else {
    for (let i = 0; i < requests.length; i++) pending.push(i);
  }

  let todo = pending;
  while (todo.length > 0) {
    const counts = new Map<string, number>();
    for (const i of todo) counts.set(requests[i]!.base, (counts.get(requests[i]!.base) ?? 0) + 1);
    const reserved = await moveCounters(trx, scope, counts);
    const next = new Map<string, number>();
    for (const row of reserved) next.set(row.base, Number(row.last) - counts.get(row.base)! + 1);
    const candidates = todo.map((i) => {
      const base = requests[i]!.base;
      const n = next.get(base)!;
      next.set(base, n + 1);
      return slugWithClash(base, n);
    });
    // A clash-numbered label can equal another name's plain slug (`acme-2`), or a label held before:
    // skip labels already held. Only a label some allocator may have handed out before can be held
    // (below), so only those are looked up: in a first import of the register that is a few percent
    // of them, and the lookup was 10 % of the merge's Postgres time (two index probes a label).
    const fresh = new Set(reserved.flatMap((row) => (row.fresh ? [row.base] : [])));
    const ask = candidates.filter((slug, k) => mayBeHeld(slug, requests[todo[k]!]!.base, fresh));
    const taken =
      ask.length === 0
        ? { rows: [] }
        : await sql<{ slug: string }>`
      select slug from ${heldLabels(scope)} h where slug = any(${ask}::text[])`.execute(trx);
    const takenSet = new Set(taken.rows.map((r) => r.slug));
    if (alsoTaken) for (const slug of alsoTaken(candidates)) takenSet.add(slug);
    for (const slug of out) if (slug !== undefined) takenSet.add(slug);
    const retry: number[] = [];
    todo.forEach((i, k) => {
      const candidate = candidates[k]!;
      if (takenSet.has(candidate)) retry.push(i);
      else {
        out[i] = candidate;
        // Within one batch, `acme-2` asked for as a plain name and the second `acme` collide too.
        takenSet.add(candidate);
      }
    });
    todo = retry;
  }
  return out;
}

/**
 * Keeps the current labels of records about to be given new ones as their aliases (in the same
 * transaction, before the rename writes the new `public_slug`): a former label keeps answering for
 * its record and is never handed out again. A record whose label does not change is left alone, and
 * a label kept already (held before, then given back) stays as it is.
 */
export async function keepFormerSlugs(
  trx: Transaction<Database>,
  scope: SlugScope,
  renames: readonly { ownerId: number; slug: string }[],
): Promise<void> {
  if (renames.length === 0) return;
  await sql`
    insert into ${sql.table(TABLE[scope])} (slug, ${sql.ref(OWNER[scope])})
    select r.public_slug, r.id
    from unnest(${renames.map((x) => x.ownerId)}::bigint[], ${renames.map((x) => x.slug)}::text[]) as v(id, slug)
    join ${sql.table(RECORDS[scope])} r on r.id = v.id
    where r.public_slug <> v.slug
    on conflict (slug) do nothing`.execute(trx);
}

/**
 * allocateSlugs in a short transaction of its own, committed at once: the labels are reserved (their
 * counters moved on, so the counters never hand them out again) but not recorded yet. The register
 * merge uses it so the slug lock is held for milliseconds instead of for a whole chunk's insert, and
 * chunks can be merged side by side.
 *
 * What the lock no longer covers: a clash-numbered label (`acme-2`) equal to another name's plain
 * slug, reserved by two allocators before either records it. `alsoTaken` closes that within one
 * caller: it names the labels the caller reserved and has not recorded yet (the register merge: the
 * labels its chunks in flight hold), which allocateSlugs then skips. This matters because the
 * register merge writes chunks side by side and commits them in key order: had an earlier chunk been
 * handed a label a later, uncommitted chunk already wrote, its insert would wait for the later
 * chunk's commit, which waits for the earlier chunk, a wait Postgres cannot see. Between different callers
 * (another feed's new Orgs) the Orgs' unique `public_slug` (and the label-owner checks of 0022) refuse the
 * second insert once the first commits, and the caller retries with a fresh reservation
 * (registrar.loader.ts, MergeRaceError). `keep` stores the labels in the same transaction, so the
 * caller can give the same labels again when its write rolls back and is retried.
 */
export async function reserveSlugs(
  db: Db,
  scope: SlugScope,
  requests: readonly SlugRequest[],
  keep: (trx: Transaction<Database>, slugs: string[]) => Promise<void>,
  alsoTaken?: AlsoTaken,
): Promise<string[]> {
  if (requests.length === 0) return [];
  return db.transaction().execute(async (trx) => {
    // Waits only for other allocators; the bound turns an unforeseen wait cycle into a retried error.
    await sql`set local lock_timeout = '60s'`.execute(trx);
    const slugs = await allocateSlugs(trx, scope, requests, alsoTaken);
    await keep(trx, slugs);
    return slugs;
  });
}
