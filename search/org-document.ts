import { bizdirUid } from '../shared/domains.js';
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
  /** The first character of `n`: sorted on before `np`. */
  n1: string;
  /** Bucket of `n` (its first three characters, or nine in a crowded prefix): sorted on before `n` (nameBucket). */
  np: string;
  /** orgs.updated in ms: the `updated` sort, its ties broken by `ua` (or `ud`) then `d`. */
  u: number;
  /**
   * `updated` then the stable domain's bucket, as one number (updatedThenBucket): sorted on after
   * `u` by `updated` ascending (`ua`) and descending (`ud`), before `d`.
   */
  ua: number;
  ud: number;
  /** The first character of `d`: sorted on before `db` in the relevance tiers. */
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

/**
 * Sort buckets. Meilisearch sorts by walking an attribute's values in order and intersecting each
 * with the candidates, so a deep page of a large set visits every value before it. Sorting first on
 * a coarse prefix of the key, whose values each hold hundreds of Orgs, lets it skip every bucket
 * that ends before the page whole and walk the exact key only inside the bucket the page starts in.
 * A prefix of an order-preserving key keeps the order, so the answer is the same. The widths were
 * measured (docs/benchmarks.md).
 */
export const nameBucket = (n: string) => {
  const bucket = n.slice(0, 3);
  return CROWDED_NAME_PREFIXES.has(bucket) ? n.slice(0, CROWDED_BUCKET_WIDTH) : bucket;
};
/**
 * Three-character prefixes of the name key that hold too many names to be one bucket. A deep page
 * costs about the size of the bucket it starts in, and one prefix stands out: names starting "THE"
 * are several times as many as those of any other prefix (docs/benchmarks.md). Their bucket is nine
 * characters of the key instead: "the", then a space (`00w`, three characters in the key) and the
 * next word's first three letters. The width depends only on the first three characters, which
 * every bucket keeps, so the buckets still sort as the keys they cut.
 */
export const CROWDED_NAME_PREFIXES: ReadonlySet<string> = new Set(['the']);
const CROWDED_BUCKET_WIDTH = 9;
export const domainBucket = (d: string) => d.slice(0, 2);

/**
 * The coarsest buckets: the first character of the name key and of the stable domain. Meilisearch
 * yields a sort attribute's values one by one, each intersected with the candidates, and skips a
 * value only whole: below one bucket of `np` or `db` it cannot skip a range of them. With `n1`
 * sorted on first, a deep page skips whole first letters and walks `np` inside one; `d1` does the
 * same for `db` (docs/benchmarks.md).
 */
export const firstCharacter = (key: string) => key.slice(0, 1);

/**
 * `updated` (ms) with the stable domain's bucket as a fraction: the bucket's rank (base 36, 0-1,295,
 * the order of `db`) over 4,096 for `ua`, and 1,295 minus it for `ud`. So `ua` ascending orders by
 * `updated` then `db` ascending, and `ud` descending by `updated` descending then `db` ascending,
 * each as one key. Meilisearch starts the sort rule after `u` once for every group of equal
 * `updated` a page reaches (one per import transaction), and a start of `db` reads most of its facet
 * tree (1,296 values over every Org); a start of `ua` reads only the narrow range of one `updated`.
 * A double holds ms below 2^41 (the year 2039) plus a fraction in steps of 1/4,096 exactly; past
 * that the fraction rounds to coarser steps, which may merge neighbouring buckets but never
 * reorders them (`d` breaks the ties).
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
