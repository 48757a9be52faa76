/**
 * What an Org looks like in the search index, and how a name becomes searchable text.
 *
 * Exact substring search: every suffix of the case-folded name is stored as a filterable value,
 * so "q is a substring of the name" becomes "some suffix starts with q" (`STARTS WITH`). The answer
 * set is exact, so `total` is exact and no result needs re-checking. The suffixes are spread over
 * fields by their first two characters (bucketOf), so a query only scans the suffixes that can
 * match; one- and two-character terms are plain lookups (`c = x`, `b_<xy> EXISTS`).
 *
 * Meilisearch normalises facet values (lower case, trimmed) and compares accented letters loosely
 * in STARTS WITH, while the semantics are case-folded but accent-exact (`widget` must not find
 * `widgét`) and whitespace-exact (`q=" ltd"` must not find "acmeltd"). So the folded name is
 * written in [a-z0-9] plus `^` escapes for every other character. The escapes form a prefix code
 * (no code word is the start of another), so "encoded q is a prefix of an encoded suffix" holds
 * exactly when "q is a prefix of the suffix".
 */

import { foldName } from '../name-text.js';
import type { OrgRowForIndex } from '../org-document.js';

export { foldName };

/** Short escapes for the characters company names use most. */
const SHORT: Record<string, string> = {
  ' ': '^s',
  '^': '^^',
  '&': '^a',
  "'": '^q',
  '"': '^w',
  '.': '^d',
  '-': '^h',
  ',': '^m',
  '(': '^o',
  ')': '^c',
};

function encodeChar(c: string): string {
  if (/[a-z0-9]/.test(c)) return c;
  // Everything else is written as ASCII. Meilisearch's STARTS WITH compares a trailing accented
  // letter loosely (`cafe` finds `café`), so no non-ASCII character may reach it; whitespace would
  // be trimmed, and quotes and backslash would need filter-syntax escaping.
  return SHORT[c] ?? `^x${c.codePointAt(0)!.toString(16)};`;
}

/** Encodes already-folded text, one code word per character. */
export function encodeFolded(folded: string): string {
  let out = '';
  for (const c of folded) out += encodeChar(c);
  return out;
}

/**
 * Meilisearch keeps facet values up to about 480 bytes; a longer suffix is cut at this many bytes.
 * A query whose encoding is longer than this could then never match; `searchableQuery` reports it.
 */
export const MAX_SUFFIX_BYTES = 400;

function truncateBytes(s: string, max: number): string {
  if (Buffer.byteLength(s) <= max) return s;
  let out = '';
  let bytes = 0;
  for (const c of s) {
    const n = Buffer.byteLength(c);
    if (bytes + n > max) break;
    out += c;
    bytes += n;
  }
  return out;
}

const WORD_CHAR = /[\p{L}\p{N}]/u;

export interface NameKeys {
  /** The folded name, used as the sort key for `sort=name`. */
  sortName: string;
  /** The whole encoded name (equality and prefix tiers of `sort=relevance`). */
  full: string;
  /** Encoded suffixes starting at a word start other than the first character (relevance tier). */
  wordStarts: string[];
  /** Every encoded suffix, the whole name included, de-duplicated. */
  suffixes: string[];
  /** The distinct code words (encoded characters): one-character queries are an equality lookup. */
  chars: string[];
  /** Suffixes of two or more characters, grouped by bucket (see bucketOf). */
  buckets: Record<string, string[]>;
}

/**
 * Meilisearch answers STARTS WITH by scanning the distinct values of the field, so one field with
 * every suffix of a million names (tens of millions of values) is slow. Suffixes are spread over
 * fields by their first two characters: a query scans only the suffixes that start like it does.
 */
export function bucketOf(firstTwoCodes: string): string {
  return `b_${Buffer.from(firstTwoCodes).toString('hex')}`;
}

export function nameKeys(name: string): NameKeys {
  const chars = [...foldName(name)];
  const codes = chars.map(encodeChar);
  const suffixes = new Set<string>();
  const wordStarts = new Set<string>();
  const buckets: Record<string, string[]> = {};
  // Build suffixes from the end so each is one concatenation onto the previous one.
  let tail = '';
  for (let i = codes.length - 1; i >= 0; i--) {
    tail = codes[i]! + tail;
    const value = truncateBytes(tail, MAX_SUFFIX_BYTES);
    if (suffixes.has(value)) continue;
    suffixes.add(value);
    if (i < codes.length - 1) {
      const key = bucketOf(codes[i]! + codes[i + 1]!);
      const bucket = buckets[key];
      if (bucket) bucket.push(value);
      else buckets[key] = [value];
    }
    if (i > 0 && WORD_CHAR.test(chars[i]!) && !WORD_CHAR.test(chars[i - 1]!)) wordStarts.add(value);
  }
  const sortName = chars.join('');
  return {
    sortName,
    full: truncateBytes(tail, MAX_SUFFIX_BYTES),
    wordStarts: [...wordStarts],
    suffixes: [...suffixes],
    chars: [...new Set(codes)],
    buckets,
  };
}

/** One Org in the index. Short field names keep the payload and the facet databases small. */
export interface OrgDocument {
  /** orgs.id */
  id: number;
  /** Stable domain id (orgs.uid): the tie-break of every sort. */
  d: string;
  /** Folded name: sort key. */
  n: string;
  /** orgs.updated in epoch milliseconds: sort key. */
  u: number;
  /** orgs.version_number: `reindex --verify` compares it to find stale entries. */
  v: number;
  /** Whole encoded name. */
  p: string;
  /** Word-start suffixes. */
  w: string[];
  /** Distinct encoded characters. */
  c: string[];
  /** Suffix buckets `b_<hex>` (see bucketOf). */
  [bucket: `b_${string}`]: string[];
}

export function toV1OrgDocument(row: OrgRowForIndex): OrgDocument {
  const keys = nameKeys(row.name);
  return {
    id: row.id,
    d: row.uid,
    n: keys.sortName,
    u: row.updated.getTime(),
    v: row.version_number,
    p: keys.full,
    w: keys.wordStarts,
    c: keys.chars,
    ...keys.buckets,
  };
}

/** The encoded form of a search term, or null when it is longer than any indexed suffix can be. */
export function encodeQuery(q: string): string | null {
  const encoded = encodeFolded(foldName(q));
  return Buffer.byteLength(encoded) > MAX_SUFFIX_BYTES ? null : encoded;
}

/** A search term as code words (one per character), or null when longer than any indexed suffix. */
export function queryCodes(q: string): string[] | null {
  const codes = [...foldName(q)].map(encodeChar);
  return Buffer.byteLength(codes.join('')) > MAX_SUFFIX_BYTES ? null : codes;
}
