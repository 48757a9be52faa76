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
 * Labels handed out but not recorded yet (a register run's reserved labels, registrar.labels.ts),
 * among `candidates`: allocateSlugs treats them as held. Read in the allocator's transaction.
 */
export type AlsoHeld = (
  trx: Transaction<Database>,
  candidates: readonly string[],
) => Promise<Iterable<string>>;

export interface SlugRequest {
  /** The slugified name (see slugify). */
  base: string;
  /** Set for a record that exists already (a rename): a label it held before is given back. */
  ownerId?: number;
}

/**
 * The last number each base's counter handed out; a base without a counter is absent. One index
 * probe per base, as a subquery per row so no join can be planned instead: a register run fills the
 * counters faster than their statistics follow, and `base = any(...)` (or a join) was then planned as
 * a scan of every counter, for each reservation, the slowest part of a run's label pass.
 */
async function countersOf(
  trx: Transaction<Database>,
  scope: SlugScope,
  bases: readonly string[],
): Promise<Map<string, number>> {
  const { rows } = await sql<{ base: string; last: number | null }>`
    select k.base, (select last from public_slug_counters c where c.scope = ${scope} and c.base = k.base) as last
    from unnest(${bases}::text[]) as k(base)`.execute(trx);
  return new Map(rows.flatMap((r) => (r.last === null ? [] : [[r.base, Number(r.last)] as const])));
}

/** Stores the counters' new last numbers (never lower than stored: a counter only grows). */
async function saveCounters(
  trx: Transaction<Database>,
  scope: SlugScope,
  last: ReadonlyMap<string, number>,
): Promise<void> {
  if (last.size === 0) return;
  await trx
    .insertInto('public_slug_counters')
    .columns(['scope', 'base', 'last'])
    .expression((eb) =>
      eb
        .selectFrom(
          bulkRows(
            'b',
            { base: 'text', n: 'integer' },
            [...last].map(([base, n]) => ({ base, n })),
          ),
        )
        .select([eb.val(scope).as('scope'), 'b.base', 'b.n']),
    )
    .onConflict((oc) =>
      oc
        .columns(['scope', 'base'])
        .doUpdateSet({ last: sql<number>`greatest(public_slug_counters.last, excluded.last)` }),
    )
    .execute();
}

/**
 * Whether `slug`, handed out now for `base`, may be held already. Every label is `base` or
 * `base-<n>` for the base and number its counter gave (slugWithClash), so the plain label of a base
 * without a counter was never handed out as that base's label; it can be another base's clash
 * label only if it ends in `-<digits>` (`acme-2` is ACME's second label and ACME 2's first).
 */
function mayBeHeld(slug: string, base: string, fresh: ReadonlySet<string>): boolean {
  return slug !== base || !fresh.has(base) || /-\d+$/.test(base);
}

/** Of `ask`, the labels held: by a record (current or former) or, through `alsoHeld`, in flight. */
async function heldAmong(
  trx: Transaction<Database>,
  scope: SlugScope,
  ask: readonly string[],
  alsoHeld?: AlsoHeld,
): Promise<Set<string>> {
  const { rows } = await sql<{ slug: string }>`
    select slug from ${heldLabels(scope)} h where slug = any(${ask}::text[])`.execute(trx);
  const held = new Set(rows.map((r) => r.slug));
  if (alsoHeld) for (const slug of await alsoHeld(trx, ask)) held.add(slug);
  return held;
}

/** Fills in the labels renamed records held before for their new names; returns the others' indexes. */
async function giveBack(
  trx: Transaction<Database>,
  scope: SlugScope,
  requests: readonly SlugRequest[],
  out: string[],
): Promise<number[]> {
  const owners = [...new Set(requests.flatMap((r) => (r.ownerId === undefined ? [] : [r.ownerId])))];
  if (owners.length === 0) return requests.map((_, i) => i);
  const held = await sql<{ slug: string; owner: number }>`
    select slug, owner from ${heldLabels(scope)} h where owner = any(${owners}::bigint[])`.execute(trx);
  const byOwner = new Map<number, string[]>();
  for (const row of held.rows) byOwner.set(row.owner, [...(byOwner.get(row.owner) ?? []), row.slug]);
  const pending: number[] = [];
  requests.forEach((r, i) => {
    const mine = r.ownerId === undefined ? undefined : byOwner.get(r.ownerId);
    const reuse = mine?.find((s) => s === r.base || new RegExp(`^${r.base}-\\d+$`).test(s));
    if (reuse) out[i] = reuse;
    else pending.push(i);
  });
  return pending;
}

/**
 * Hands out public domain labels for a batch: `base`, then `base-2`, `base-3`, ... A label is never
 * handed out twice: current labels are the records' `public_slug`, and a renamed record's former
 * labels stay in the labels table as aliases (keepFormerSlugs). A transaction-level advisory lock
 * serialises allocators of one scope, so two imports at once cannot pick the same label; it is held
 * until the caller's transaction ends, which must also write the labels (as `public_slug`).
 *
 * The requests take their turn in the order given, as if each were allocated alone: a renamed record
 * gets back a label it held for its new name; any other gets the first label of its base above the
 * base's counter that nobody holds (nor an earlier request of the batch), and the counter moves to it.
 * So the labels do not depend on how a run's requests are cut into batches (docs/decisions.md, Public
 * labels), and within a base the earlier request always gets the lower number.
 */
export async function allocateSlugs(
  trx: Transaction<Database>,
  scope: SlugScope,
  requests: readonly SlugRequest[],
  alsoHeld?: AlsoHeld,
): Promise<string[]> {
  const out = new Array<string>(requests.length);
  if (requests.length === 0) return out;
  await sql`select pg_advisory_xact_lock(hashtext(${`bizdir:slugs:${scope}`}))`.execute(trx);
  const pending = await giveBack(trx, scope, requests, out);
  if (pending.length === 0) return out;
  const bases = [...new Set(pending.map((i) => requests[i]!.base))];
  const last = await countersOf(trx, scope, bases);
  const fresh = new Set(bases.filter((b) => !last.has(b)));
  const moved = new Map<string, number>();
  const given = new Set(out.filter((s) => s !== undefined));
  // Labels looked up so far: true when held. Only a label some allocator may have handed out before
  // can be held (mayBeHeld), so only those are looked up: in a first import of the register that is
  // a few percent of them, and the lookup was 10 % of the merge's Postgres time.
  const known = new Map<string, boolean>();
  const unknown = (slug: string, base: string) => mayBeHeld(slug, base, fresh) && !known.has(slug);
  /** The first label of `base` after number `from` that is neither given in this batch nor known held. */
  const firstFree = (base: string, from: number) => {
    for (let n = from + 1; ; n++) {
      const slug = slugWithClash(base, n);
      if (!given.has(slug) && known.get(slug) !== true) return { slug, n };
    }
  };
  let next = 0;
  while (next < pending.length) {
    // Look up at once the labels the requests still waiting would take if nothing else were held.
    const wanted = new Map<string, number>();
    for (const i of pending.slice(next))
      wanted.set(requests[i]!.base, (wanted.get(requests[i]!.base) ?? 0) + 1);
    const ask = new Set<string>();
    for (const [base, count] of wanted) {
      let n = last.get(base) ?? 0;
      for (let k = 0; k < count; k++) {
        const free = firstFree(base, n);
        n = free.n;
        if (unknown(free.slug, base)) ask.add(free.slug);
      }
    }
    if (ask.size > 0) {
      const held = await heldAmong(trx, scope, [...ask], alsoHeld);
      for (const slug of ask) known.set(slug, held.has(slug));
    }
    // Then hand them out in order, until a request meets a label not looked up yet (a clash within
    // the batch moved it past the labels looked up): the next pass of the loop looks that one up.
    for (; next < pending.length; next++) {
      const i = pending[next]!;
      const base = requests[i]!.base;
      const free = firstFree(base, last.get(base) ?? 0);
      if (unknown(free.slug, base)) break;
      out[i] = free.slug;
      given.add(free.slug);
      last.set(base, free.n);
      moved.set(base, free.n);
    }
  }
  await saveCounters(trx, scope, moved);
  return out;
}

/** Who holds each of `slugs` (current or former label), by label; a label nobody holds is absent. */
export async function labelHolders(
  db: Db,
  scope: SlugScope,
  slugs: readonly string[],
): Promise<Map<string, Set<number>>> {
  const holders = new Map<string, Set<number>>();
  if (slugs.length === 0) return holders;
  const { rows } = await sql<{ slug: string; owner: number }>`
    select k.slug, h.owner from unnest(${slugs}::text[]) as k(slug)
    cross join lateral (select owner from ${heldLabels(scope)} h where h.slug = k.slug) h`.execute(db);
  for (const r of rows) holders.set(r.slug, (holders.get(r.slug) ?? new Set()).add(Number(r.owner)));
  return holders;
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
 * slug, reserved by two allocators before either records it. `alsoHeld` closes that within one
 * caller: it names the labels the caller reserved and has not recorded yet (the register merge: its
 * run's labels, registrar.labels.ts), which allocateSlugs then skips. Between different callers
 * (another feed's new Orgs) the Orgs' unique `public_slug` (and the label-owner checks of 0022) refuse
 * the second insert once the first commits, and the caller retries with a fresh reservation
 * (registrar.orgs.ts, MergeRaceError). `keep` stores the labels in the same transaction, so the
 * caller can give the same labels again when its write rolls back and is retried.
 */
export async function reserveSlugs(
  db: Db,
  scope: SlugScope,
  requests: readonly SlugRequest[],
  keep: (trx: Transaction<Database>, slugs: string[]) => Promise<void>,
  alsoHeld?: AlsoHeld,
): Promise<string[]> {
  if (requests.length === 0) return [];
  return db.transaction().execute(async (trx) => {
    // Waits only for other allocators; the bound turns an unforeseen wait cycle into a retried error.
    await sql`set local lock_timeout = '60s'`.execute(trx);
    const slugs = await allocateSlugs(trx, scope, requests, alsoHeld);
    await keep(trx, slugs);
    return slugs;
  });
}
