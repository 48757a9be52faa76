import { sql, type Transaction } from 'kysely';
import { slugWithClash } from '../../shared/domains.js';
import type { Database } from '../../shared/tables.js';
import { heldLabels, type SlugRequest } from '../public-domains.js';

/**
 * Public Location labels for a run whose batches are written two at a time (LocationsLoader): the
 * same labels allocateSlugs (public-domains.ts) would hand out to the batches one after the other,
 * without holding its lock and the counters' row locks for a whole batch.
 *
 * Why that is safe: Location labels are only ever handed out by a location import, and location
 * imports run one at a time (the feed's lock, locations.feed.ts), so the run is the only allocator.
 * What another allocator would read from the database, the run keeps in memory while it is not
 * committed: the counters its open batches moved and the labels they handed out. A batch allocates
 * only once the batch before it has (LabelBatch's `after`), so labels follow sheet order as before;
 * it writes its counters at its end, after the batch before it committed (saveCounters).
 */

type Trx = Transaction<Database>;

export class RunLabels {
  /** Batches that allocated and have not committed yet (or rolled back: then the run fails). */
  private readonly open = new Set<LabelBatch>();

  /** A batch's allocator; it allocates after `after` (the previous batch's allocations) settles. */
  batch(after: Promise<unknown>): LabelBatch {
    const b = new LabelBatch(this, after);
    this.open.add(b);
    return b;
  }

  /** The batch committed: its counters and labels are in the database from now on. */
  forget(b: LabelBatch): void {
    this.open.delete(b);
  }

  /** The counters the open batches moved (the later batch's value wins: allocations are in order). */
  lastInMemory(bases: readonly string[]): Map<string, number> {
    const out = new Map<string, number>();
    for (const b of this.open) {
      for (const base of bases) {
        const n = b.counters.get(base);
        if (n !== undefined) out.set(base, Math.max(n, out.get(base) ?? 0));
      }
    }
    return out;
  }

  /** Labels the open batches handed out, among `slugs`. */
  heldInMemory(slugs: readonly string[]): Set<string> {
    const out = new Set<string>();
    for (const b of this.open) for (const s of slugs) if (b.slugs.has(s)) out.add(s);
    return out;
  }
}

export class LabelBatch {
  /** base -> the last clash number this batch handed out (or passed over). */
  readonly counters = new Map<string, number>();
  readonly slugs = new Set<string>();

  constructor(
    private readonly run: RunLabels,
    private readonly after: Promise<unknown>,
  ) {}

  /**
   * allocateSlugs' rule: a renamed Location that held a label for its new name gets it back; else
   * `base`, `base-2`, ... from the base's counter, skipping labels held already (a clash-numbered
   * label can equal another name's plain one).
   */
  async allocate(trx: Trx, requests: readonly SlugRequest[]): Promise<string[]> {
    // Only the order matters here: a batch before this one that failed fails the run through its
    // own promise (the loader awaits every batch), so its error is not this batch's to raise.
    await Promise.allSettled([this.after]);
    const out = new Array<string>(requests.length);
    if (requests.length === 0) return out;
    const pending = await this.reuse(trx, requests, out);
    let todo = pending;
    while (todo.length > 0) {
      const counts = new Map<string, number>();
      for (const i of todo) counts.set(requests[i]!.base, (counts.get(requests[i]!.base) ?? 0) + 1);
      const last = await this.lastOf(trx, [...counts.keys()]);
      const next = new Map<string, number>();
      for (const [base, n] of counts) {
        const before = last.get(base) ?? 0;
        next.set(base, before + 1);
        this.counters.set(base, before + n);
      }
      const candidates = todo.map((i) => {
        const base = requests[i]!.base;
        const n = next.get(base)!;
        next.set(base, n + 1);
        return slugWithClash(base, n);
      });
      const takenSet = await this.taken(trx, candidates);
      for (const slug of out) if (slug !== undefined) takenSet.add(slug);
      const retry: number[] = [];
      todo.forEach((i, k) => {
        const candidate = candidates[k]!;
        if (takenSet.has(candidate)) retry.push(i);
        else {
          out[i] = candidate;
          takenSet.add(candidate);
          this.slugs.add(candidate);
        }
      });
      todo = retry;
    }
    return out;
  }

  /** Fills in the labels renamed Locations held before; returns the requests still to allocate. */
  private async reuse(trx: Trx, requests: readonly SlugRequest[], out: string[]): Promise<number[]> {
    const owners = [...new Set(requests.flatMap((r) => (r.ownerId === undefined ? [] : [r.ownerId])))];
    const pending: number[] = [];
    if (owners.length === 0) return requests.map((_, i) => i);
    const held = await sql<{ slug: string; owner: number }>`
      select slug, owner from ${heldLabels('location')} h where owner = any(${owners}::bigint[])`.execute(
      trx,
    );
    const byOwner = new Map<number, string[]>();
    for (const row of held.rows) byOwner.set(row.owner, [...(byOwner.get(row.owner) ?? []), row.slug]);
    requests.forEach((r, i) => {
      const mine = r.ownerId === undefined ? undefined : byOwner.get(r.ownerId);
      const again = mine?.find((s) => s === r.base || new RegExp(`^${r.base}-\\d+$`).test(s));
      if (again) out[i] = again;
      else pending.push(i);
    });
    return pending;
  }

  /**
   * The last number of each base: the open batches' (in memory), else the stored counter. Memory is
   * read before the query is sent: a batch forgotten by then has committed, so the query sees it.
   */
  private async lastOf(trx: Trx, bases: readonly string[]): Promise<Map<string, number>> {
    const last = this.run.lastInMemory(bases);
    const ask = bases.filter((b) => !last.has(b));
    if (ask.length > 0) {
      const { rows } = await sql<{ base: string; last: number }>`
        select base, last from public_slug_counters
        where scope = 'location' and base = any(${ask}::text[])`.execute(trx);
      for (const r of rows) last.set(r.base, Number(r.last));
    }
    return last;
  }

  /** Of `candidates`, the labels held: stored, or handed out by an open batch (read before the query). */
  private async taken(trx: Trx, candidates: readonly string[]): Promise<Set<string>> {
    const held = this.run.heldInMemory(candidates);
    const { rows } = await sql<{ slug: string }>`
      select slug from ${heldLabels('location')} h where slug = any(${candidates}::text[])`.execute(trx);
    for (const r of rows) held.add(r.slug);
    return held;
  }

  /**
   * Stores the batch's counters, in its transaction: never lower than stored (a counter only grows).
   * Called after the batch before it committed, so no row lock of another batch is waited for.
   */
  async saveCounters(trx: Trx): Promise<void> {
    if (this.counters.size === 0) return;
    const bases = [...this.counters.keys()];
    await sql`
      insert into public_slug_counters (scope, base, last)
      select 'location', b, n from unnest(${bases}::text[], ${bases.map((b) => this.counters.get(b)!)}::int[]) as v(b, n)
      on conflict (scope, base) do update set last = greatest(public_slug_counters.last, excluded.last)`.execute(
      trx,
    );
  }
}
