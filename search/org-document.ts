import { bizdirUid } from '../shared/domains.js';
import { toV1OrgDocument } from './legacy-v1/org-document.js';
import type { IndexFormat } from './meili-client.js';
import { foldName, nameSortKey, nameTerms } from './name-text.js';

/** One Org in the index. Short field names keep the payload small. */
export interface OrgDocument {
  /** orgs.id */
  id: number;
  /** The name's trigram words (name-text.ts), space-separated: the only searchable field. */
  g: string;
  /** Links that make the Org a suspect for some terms; absent for most names. */
  l?: string[];
  /** The folded name as an order-preserving ASCII key (nameSortKey): the `name` sort. */
  n: string;
  /**
   * Stable domain id (bizdir_uid(orgs.id)): the tie-break of every sort, and how filters name an
   * Org (`d IN [...]`).
   */
  d: string;
  /** orgs.version_number: `reindex --verify` compares it to find stale entries. */
  v: number;
  /** The first character of `n`: sorted on before `np` (format 7). */
  n1: string;
  /** Bucket of `n` (its first three characters, or nine in a crowded prefix): sorted on before `n` (nameBucket). */
  np: string;
  /** orgs.updated in ms: the `updated` sort, its ties broken by `ua` (or `ud`) then `d`. */
  u: number;
  /**
   * `updated` then the stable domain's bucket, as one number (updatedThenBucket): sorted on after
   * `u` by `updated` ascending (`ua`) and descending (`ud`), before `d` (format 7).
   */
  ua: number;
  ud: number;
  /** The first character of `d`: sorted on before `db` in the relevance tiers (format 7). */
  d1: string;
  /** Bucket of `d` (its first two characters): sorted on before `d`. */
  db: string;
}

export interface OrgRowForIndex {
  id: number;
  uid: string;
  name: string;
  updated: Date;
  version_number: number;
}

/** An Org row as read from `orgs`, with its uid (computed: Orgs store none since migration 0023). */
export function withUid<R extends { id: number | string }>(row: R): R & { id: number; uid: string } {
  const id = Number(row.id);
  return { ...row, id, uid: bizdirUid(id) };
}

/** `updated` in ms, fixed-width base 36 (9 digits hold every date up to the year 5138). */
const msKey = (updated: Date) => Math.max(0, updated.getTime()).toString(36).padStart(9, '0');

/** Each base-36 digit replaced by its complement: reverses the order of equal-length keys. */
const complement = (key: string) => [...key].map((c) => (35 - Number.parseInt(c, 36)).toString(36)).join('');

/**
 * The two keys of the `updated` order: `0<ms><uid>` is the smallest and gives `updated` then stable
 * domain ascending; `1<ms><complement of uid>` is the largest, and sorted descending gives
 * `updated` descending then stable domain ascending. Stable ids are 8 base-36 characters, so
 * every value is unique. Format 4 sorted on them (`t`); format 5 sorts on `u` (the ms), `db` and
 * `d`, which is the same order; fresh-changes.ts orders by them.
 */
export function updatedKeys(updated: Date, uid: string): [string, string] {
  const ms = msKey(updated);
  return [`0${ms}${uid}`, `1${ms}${complement(uid)}`];
}

/**
 * Sort buckets. Meilisearch sorts by walking an attribute's values in order and intersecting each
 * with the candidates, so a page at offset 9,900 of a set holding 5 % of the register visits about
 * 200,000 values (60-150 ms). Sorting first on a coarse prefix of the key, whose values each hold
 * hundreds of Orgs, lets it skip every bucket that ends before the page whole and walk the exact
 * key only inside the bucket the page starts in. A prefix of an order-preserving key keeps the
 * order, so the answer is the same. The widths were measured (docs/search.md).
 */
export const nameBucket = (n: string) => {
  const bucket = n.slice(0, 3);
  return CROWDED_NAME_PREFIXES.has(bucket) ? n.slice(0, CROWDED_BUCKET_WIDTH) : bucket;
};
/**
 * Three-character prefixes of the name key that hold too many names to be one bucket. A deep page
 * costs about the size of the bucket it starts in, and one prefix stands out: names starting "THE"
 * are 5 % of the register (284,330 of the generated 5.7M; the next largest prefix holds 40,325), so
 * a name-sorted page starting among them took 49-63 ms in Meilisearch at 5.7M against 18-20 ms in
 * a bucket of 1,000 names (docs/search.md). Their bucket is nine characters of the key instead:
 * "the", then a space (`00w`, three characters in the key) and the next word's first three
 * letters. The width depends only on the first three characters, which every bucket keeps, so the
 * buckets still sort as the keys they cut (format 6; format 5 cut every key at three: `nb`).
 */
export const CROWDED_NAME_PREFIXES: ReadonlySet<string> = new Set(['the']);
const CROWDED_BUCKET_WIDTH = 9;
/** Format 5's bucket of `n`: its first three characters. */
export const v5NameBucket = (n: string) => n.slice(0, 3);
/** Format 4's buckets of `t`: the flag, `updated` in ms (9 digits) and the stable id's first character. */
export const updatedBuckets = (t: readonly [string, string]): [string, string] => [
  t[0].slice(0, 11),
  t[1].slice(0, 11),
];
export const domainBucket = (d: string) => d.slice(0, 2);

/**
 * The coarsest buckets (format 7): the first character of the name key and of the stable domain.
 * Meilisearch yields a sort attribute's values one by one, each intersected with the candidates, and
 * skips a value only whole: below one bucket of `np` or `db` it cannot skip a range of them. At 1M
 * Orgs a page at offset 9,900 of 58,000 candidates walked hundreds of `np` values (35-96 ms of
 * Meilisearch's time); with `n1` sorted on first it skips whole first letters and walks `np` inside
 * one (8-24 ms); `d1` does the same for `db` (41-67 → 4-9 ms) (docs/search.md, "Format 7").
 */
export const firstCharacter = (key: string) => key.slice(0, 1);

/**
 * `updated` (ms) with the stable domain's bucket as a fraction: the bucket's rank (base 36, 0-1,295,
 * the order of `db`) over 4,096 for `ua`, and 1,295 minus it for `ud`. So `ua` ascending orders by
 * `updated` then `db` ascending, and `ud` descending by `updated` descending then `db` ascending: the
 * two orders of format 6's `u`, `db` rules, each as one key. Meilisearch starts the sort rule after
 * `u` once for every group of equal `updated` a page reaches (one per import transaction), and a
 * start of `db` reads most of its facet tree (1,296 values over every Org); a start of `ua` reads
 * only the narrow range of one `updated` (docs/search.md, "Format 7"). A double holds ms below 2^41
 * (the year 2039) plus a fraction in steps of 1/4,096 exactly; past that the fraction rounds to
 * coarser steps, which may merge neighbouring buckets but never reorders them (`d` breaks the ties).
 */
export function updatedThenBucket(updatedMs: number, uid: string): { ua: number; ud: number } {
  const rank = Number.parseInt(domainBucket(uid), 36);
  return { ua: updatedMs + rank / 4096, ud: updatedMs + (1295 - rank) / 4096 };
}

export function toOrgDocument(row: OrgRowForIndex): OrgDocument {
  const folded = foldName(row.name);
  const terms = nameTerms(folded);
  const n = nameSortKey(folded);
  return {
    id: row.id,
    g: terms.words.join(' '),
    ...(terms.links.length > 0 ? { l: terms.links } : {}),
    n,
    d: row.uid,
    v: row.version_number,
    n1: firstCharacter(n),
    np: nameBucket(n),
    u: row.updated.getTime(),
    ...updatedThenBucket(row.updated.getTime(), row.uid),
    d1: firstCharacter(row.uid),
    db: domainBucket(row.uid),
  };
}

/** A document of format 6: no first-character buckets. */
export function toV6OrgDocument(row: OrgRowForIndex): object {
  const { n1: _n1, d1: _d1, ua: _ua, ud: _ud, ...rest } = toOrgDocument(row);
  return rest;
}

/** A document of format 5: the name bucket `nb`, three characters of `n` for every name. */
export function toV5OrgDocument(row: OrgRowForIndex): object {
  const { np: _np, n1: _n1, d1: _d1, ua: _ua, ud: _ud, ...rest } = toOrgDocument(row);
  return { ...rest, nb: v5NameBucket(rest.n) };
}

/** A document of format 4: `updated` as the exact keys `t` and their buckets `tb`. */
export function toV4OrgDocument(row: OrgRowForIndex): object {
  const { np: _np, u: _u, n1: _n1, d1: _d1, ua: _ua, ud: _ud, ...rest } = toOrgDocument(row);
  const t = updatedKeys(row.updated, row.uid);
  return { ...rest, nb: v5NameBucket(rest.n), t, tb: updatedBuckets(t) };
}

/** A document of format 3: the exact sort keys without their buckets. */
export function toV3OrgDocument(row: OrgRowForIndex): object {
  const { np: _np, u: _u, db: _db, n1: _n1, d1: _d1, ua: _ua, ud: _ud, ...rest } = toOrgDocument(row);
  return { ...rest, t: updatedKeys(row.updated, row.uid) };
}

/** A document of format 2: `updated` as `u`, in ms, tie-broken on `d` by the query. */
export function toV2OrgDocument(row: OrgRowForIndex): object {
  const { np: _np, db: _db, n1: _n1, d1: _d1, ua: _ua, ud: _ud, ...rest } = toOrgDocument(row);
  return rest;
}

/** Documents for an index of the given format (an upgraded installation may still run an older one). */
export function documentsFor(format: IndexFormat, rows: readonly OrgRowForIndex[]): object[] {
  if (format === 1) return rows.map(toV1OrgDocument);
  if (format === 2) return rows.map(toV2OrgDocument);
  if (format === 3) return rows.map(toV3OrgDocument);
  if (format === 4) return rows.map(toV4OrgDocument);
  if (format === 5) return rows.map(toV5OrgDocument);
  return format === 6 ? rows.map(toV6OrgDocument) : rows.map(toOrgDocument);
}
