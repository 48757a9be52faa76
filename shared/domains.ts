/**
 * Domain names are the public identifiers of records (docs/decisions.md, Domains and identifiers).
 * Stable:  Org <uid>.<cc>.<suffix>   Location <uid>.loc.<cc>.<suffix>   Address <uid>.a.<cc>.<suffix>
 * Public:  Org <slug>.<suffix>       Location <slug>.loc.<suffix>
 * Only the labels before the suffix are stored, so the suffix is configuration, not data.
 */

export const MAX_LABEL = 63;
/** Room left in a label for a clash suffix such as `-123456`. */
export const MAX_SLUG_BASE = MAX_LABEL - 7;

const EXTRA_FOLDS: Record<string, string> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  ł: 'l',
  đ: 'd',
  ð: 'd',
  þ: 'th',
  ı: 'i',
  ħ: 'h',
};

/** Any UTF-16 code unit beyond ASCII (surrogates included). */
const NON_ASCII = /[\u0080-\uffff]/;

/** Folds accents and turns runs of anything but [a-z0-9] into `-`; at most MAX_SLUG_BASE characters. */
export function slugify(text: string, fallback = 'org'): string {
  // ASCII text has nothing to decompose, no marks and none of EXTRA_FOLDS: only its case is folded.
  // That is most names (every register row and every location label is slugified), and this path
  // is the much cheaper one (docs/journal/2026-11-28.md, 00:50).
  const folded = !NON_ASCII.test(text)
    ? text.toLowerCase()
    : text
        .normalize('NFKD')
        .replace(/\p{M}+/gu, '')
        .toLowerCase()
        .replace(/[ßæœøłđðþıħ]/g, (c) => EXTRA_FOLDS[c] ?? c);
  const slug = folded
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_SLUG_BASE)
    .replace(/-+$/, '');
  return slug || fallback;
}

/** Ids beyond 40 bits have no uid (bizdir_uid raises for them too). */
const ID_SPACE = 2 ** 40;
const HALF = 2 ** 20;

/**
 * The stable uid of a record id: the same value as the database's `bizdir_uid(id)` (migrations 0001,
 * 0014), a four-round Feistel permutation of the 40-bit id space written as 8 base-36 digits. The
 * register's Orgs and Addresses do not store it (migration 0023); readers that have the id compute it
 * here rather than in Postgres. Every intermediate value stays below 2^51, exact in a double.
 */
export function bizdirUid(id: number): string {
  if (!Number.isSafeInteger(id) || id < 0 || id >= ID_SPACE)
    throw new RangeError(`bizdir_uid: ${id} is outside the id space`);
  let left = Math.floor(id / HALF);
  let right = id % HALF;
  for (let i = 1; i <= 4; i++) {
    // ((right * 1103515245 + 12345 + i * 7919) >> 7) # (right << 3), low 20 bits
    const mixed = (Math.floor((right * 1103515245 + 12345 + i * 7919) / 128) % HALF) ^ ((right << 3) % HALF);
    const next = left ^ mixed;
    left = right;
    right = next;
  }
  return (right * HALF + left).toString(36).padStart(8, '0');
}

/** The n-th holder of a base gets `base` (n = 1), then `base-2`, `base-3`, ... */
export function slugWithClash(base: string, n: number): string {
  return n <= 1 ? base : `${base}-${n}`;
}

export type DomainRef =
  | { kind: 'org'; uid: string; cc: string }
  | { kind: 'org-public'; slug: string }
  | { kind: 'location'; uid: string; cc: string }
  | { kind: 'location-public'; slug: string }
  | { kind: 'address'; uid: string; cc: string };

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const UID = /^[a-z0-9]{1,16}$/;
const CC = /^[a-z]{2}$/;

/**
 * Reads a domain (any case) into what it names, or null when it does not end in the suffix or has
 * no known shape. The shapes cannot be confused: public Org slugs are one label, stable Org domains two.
 */
export function parseDomain(domain: string, suffix: string): DomainRef | null {
  const d = domain.trim().toLowerCase().replace(/\.$/, '');
  const tail = `.${suffix.toLowerCase()}`;
  if (!d.endsWith(tail)) return null;
  const labels = d.slice(0, -tail.length).split('.');
  if (labels.length === 0 || labels.some((l) => !LABEL.test(l))) return null;
  const [a, b, c] = labels;
  switch (labels.length) {
    case 1:
      return { kind: 'org-public', slug: a! };
    case 2:
      if (b === 'loc') return { kind: 'location-public', slug: a! };
      return UID.test(a!) && CC.test(b!) ? { kind: 'org', uid: a!, cc: b! } : null;
    case 3:
      if (!UID.test(a!) || !CC.test(c!)) return null;
      if (b === 'loc') return { kind: 'location', uid: a!, cc: c! };
      if (b === 'a') return { kind: 'address', uid: a!, cc: c! };
      return null;
    default:
      return null;
  }
}

export const orgDomain = (uid: string, cc: string, suffix: string) => `${uid}.${cc}.${suffix}`;
export const orgPublicDomain = (slug: string, suffix: string) => `${slug}.${suffix}`;
export const locationDomain = (uid: string, cc: string, suffix: string) => `${uid}.loc.${cc}.${suffix}`;
export const locationPublicDomain = (slug: string, suffix: string) => `${slug}.loc.${suffix}`;
export const addressDomain = (uid: string, cc: string, suffix: string) => `${uid}.a.${cc}.${suffix}`;
