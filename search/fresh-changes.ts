import type { Db } from '../shared/db.js';
import type { IndexDeps } from './index-calls.js';
import { foldName, nameSortKey, termMatches } from './name-text.js';
import { queryOrgIds } from './org-query.js';
import { type FreshRow, freshRows } from './search.read-model.js';
import type { OrgSearchPage, OrgSearchQuery, OrgSort } from './search-query.js';
import { dbTimed } from './search-timing.js';
import { compareStrings } from './sort-rules.js';

/**
 * Changes the index has not applied yet, searched beside it.
 *
 * A committed change reaches Meilisearch through the outbox (org-sync.ts); on a large index one
 * document update takes Meilisearch seconds (its prefix databases are recomputed per batch), so a
 * rename would stay unsearchable that long. The search therefore reads the outbox first: while it
 * holds at most FRESH_MAX Orgs (search.read-model.ts pendingOrgIds), those Orgs are left out of the index's answer (their entries may be
 * stale) and matched against their current rows in Postgres instead, then merged into the page in
 * the same order the index sorts by. Totals and pages stay exact, and a change is searchable as
 * soon as it is committed. While the outbox holds more (a bulk import being indexed), the index is
 * searched as it stands and catches up within its usual lag.
 */

/** `updated` in ms, fixed-width base 36 (9 digits hold every date up to the year 5138). */
const msKey = (updated: Date) => Math.max(0, updated.getTime()).toString(36).padStart(9, '0');

/** Each base-36 digit replaced by its complement: reverses the order of equal-length keys. */
const complement = (key: string) => [...key].map((c) => (35 - Number.parseInt(c, 36)).toString(36)).join('');

/**
 * The two keys of the `updated` order: `0<ms><uid>` is the smallest and gives `updated` then stable
 * domain ascending; `1<ms><complement of uid>` is the largest, and sorted descending gives
 * `updated` descending then stable domain ascending: the index's order on `u`, `ua` (`ud`) and `d`.
 */
export function updatedKeys(updated: Date, uid: string): [string, string] {
  const ms = msKey(updated);
  return [`0${ms}${uid}`, `1${ms}${complement(uid)}`];
}

/** Where an Org falls in a query's order: compared as [major, minor] strings, ascending. */
export type Key = [string, string];

export const cmpKey = (a: Key, b: Key) => compareStrings(a[0], b[0]) || compareStrings(a[1], b[1]);

/** Reverses the order of strings over [0-9a-z] and the name key's alphabet (used for `-name`). */
const descending = (s: string) =>
  `${[...s].map((c) => String.fromCharCode(0xffff - c.charCodeAt(0))).join('')}\uffff`;

/**
 * The order the index answers in (sort-rules.ts SORT_RULES; buckets are prefixes of these keys and
 * change nothing): name and stable domain; `updated` as updatedKeys; relevance as tier then stable
 * domain.
 */
export function orderKey(row: FreshRow, sort: OrgSort, folded: string, domainIds: ReadonlySet<number>): Key {
  const n = nameSortKey(foldName(row.name));
  switch (sort) {
    case 'name':
      return [n, row.uid];
    case '-name':
      return [descending(n), row.uid];
    case 'updated':
      return [updatedKeys(row.updated, row.uid)[0], ''];
    case '-updated':
      return [descending(updatedKeys(row.updated, row.uid)[1]), ''];
    case 'relevance': {
      if (folded === '') return ['', row.uid];
      const k = nameSortKey(folded);
      const tier = domainIds.has(row.id) || n === k ? '1' : n >= k && n < `${k}{` ? '2' : '3';
      return [tier, row.uid];
    }
  }
}

/** Does the Org answer the query (its name contains the term, or its domain equals it)? */
export function answers(row: FreshRow, folded: string, domainIds: ReadonlySet<number>): boolean {
  return folded === '' || domainIds.has(row.id) || termMatches(foldName(row.name), folded);
}

/**
 * One page of the merge of the index's answer A (fresh Orgs left out) and the fresh matches B
 * (sorted, k of them). `indexPage` is A from position `from = max(0, offset - k)`, `limit +
 * (offset - from)` long, with A's total; every B element before A[from] then ranks before
 * `offset`, and every one after the window's last (when A goes on) at or after `offset + limit`,
 * so the ranks of everything that can fall in the page are known exactly.
 */
export function mergePage(
  query: Pick<OrgSearchQuery, 'offset' | 'limit'>,
  from: number,
  index: OrgSearchPage,
  indexKeys: readonly Key[],
  fresh: readonly { id: number; key: Key }[],
): OrgSearchPage {
  const { offset, limit } = query;
  const total = index.total + fresh.length;
  const a = index.ids.map((id, i) => ({ id, key: indexKeys[i]! }));
  const aEnded = from + a.length >= index.total;
  const ranked: { id: number; rank: number }[] = [];
  // A[from + i] ranks after the fresh Orgs before it.
  let j = 0;
  for (const [i, item] of a.entries()) {
    while (j < fresh.length && cmpKey(fresh[j]!.key, item.key) < 0) j++;
    ranked.push({ id: item.id, rank: from + i + j });
  }
  for (const [j2, b] of fresh.entries()) {
    // How many of A come before b: known when b is inside the window (or A has ended).
    let before: number;
    if (a.length === 0) {
      // An empty window of a non-empty A means offset >= the whole total (or limit 0): no page.
      if (index.total > 0) continue;
      before = 0;
    } else if (cmpKey(b.key, a[0]!.key) < 0) {
      if (from > 0) continue; // ranks before offset
      before = 0;
    } else {
      const within = a.findIndex((x) => cmpKey(b.key, x.key) < 0);
      if (within >= 0) before = from + within;
      else if (aEnded) before = index.total;
      else continue; // ranks at or after offset + limit
    }
    ranked.push({ id: b.id, rank: before + j2 });
  }
  const ids = ranked
    .filter((r) => r.rank >= offset && r.rank < offset + limit)
    .sort((x, y) => x.rank - y.rank)
    .map((r) => r.id);
  return { ids, total };
}

/**
 * The index's answer without the pending Orgs, merged with those of them that answer the query
 * now (above): exact totals and pages, a change searchable as soon as it is committed.
 */
export async function withFreshChanges(
  db: Db,
  deps: IndexDeps,
  query: OrgSearchQuery,
): Promise<OrgSearchPage> {
  const exclude = deps.exclude ?? [];
  const folded = foldName(query.q);
  const domainIds = new Set(query.domainOrgIds);
  const read = <T>(fn: () => Promise<T>) => dbTimed(deps.timing, fn);
  const rows = await read(() => freshRows(db, exclude));
  const fresh = [...rows.values()]
    .filter((row) => answers(row, folded, domainIds))
    .map((row) => ({ id: row.id, key: orderKey(row, query.sort, folded, domainIds) }))
    .sort((a, b) => cmpKey(a.key, b.key));
  if (fresh.length === 0) return queryOrgIds(deps, query);
  const from = Math.max(0, query.offset - fresh.length);
  const indexPage = await queryOrgIds(deps, {
    ...query,
    offset: from,
    limit: query.limit + (query.offset - from),
  });
  const indexRows = await read(() => freshRows(db, indexPage.ids));
  // An Org deleted since the index answered has no row: it sorts as nothing and is dropped by the API.
  const keys = indexPage.ids.map((id) => {
    const row = indexRows.get(id);
    return row ? orderKey(row, query.sort, folded, domainIds) : (['', ''] as Key);
  });
  return mergePage(query, from, indexPage, keys, fresh);
}
