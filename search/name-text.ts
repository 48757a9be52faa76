/**
 * How an Org name becomes words in the search index, and how a search term becomes a query.
 *
 * Substring search on a word index: every name is stored as its overlapping trigrams (three
 * characters starting at every position, Google Code Search's and pg_trgm's idea), written as
 * ASCII words so Meilisearch's tokenizer and normalizer keep them exactly as they are. A term of
 * one or two characters is a prefix of some trigram; a longer term becomes the phrase of its own
 * trigrams, which every name containing the term also contains.
 *
 * The converse does not always hold: "abcxbcd" holds both trigrams of "abcd" without holding
 * "abcd". Such a false candidate needs a bigram of the term that occurs twice in the name, so at
 * indexing time each name records, as filter values (`links`), the few n-grams it could fake:
 * - a "false 4-gram" a·b·c where the bigram b occurs twice, once after a and once before c, and
 *   a·b·c is not really in the name;
 * - a "false 5-gram" built the same way around a repeated trigram;
 * - each 4-gram that occurs twice (REPEAT_PREFIX + the 4-gram).
 * If a name holds every trigram of a term but not the term, then one of the term's 4-grams is a
 * false 4-gram of the name, or one of its 5-grams a false 5-gram, or (for terms of six or more
 * characters) the name repeats one of the term's inner 4-grams, neither its first nor its last
 * (see docs/search.md for the argument). So the names
 * without any of those links are exact matches, and only the few with one are checked against
 * the names in Postgres. Totals stay exact.
 *
 * Characters are written in a prefix code over [a-z0-9]: letters and digits stand for themselves,
 * a space is `q`, and `x` starts an escape (`xq` is the letter q, `xx` the letter x, `xa` an `&`,
 * `xz` + four base-36 digits any other code point). No code word is the start of another, so
 * "the code of q is a prefix of a word" holds exactly when q's characters start that trigram.
 * Relevance ("equals", "starts with") does not need the words: the name sort key below is a
 * prefix-preserving ASCII string, so those are exact equality and range filters on it.
 */

/** Case folding used for matching: canonical composition, Unicode lower case, whitespace runs as one space. */
export function foldName(text: string): string {
  return text.normalize('NFC').toLowerCase().replace(/\s+/gu, ' ');
}

/** Pads the words at the end of a name (never a character of a name or a term). */
const END = 'xk';
/** Filter value of a name that repeats one 4-gram: this + the 4-gram (':' is no code character). */
const REPEAT_PREFIX = 'r:';
/** Filter value of a name with more links than LINK_CAP: a suspect for every term of 4+ characters. */
export const SUSPECT_MARK = 'ss';
/** Above this many links a name is stored with SUSPECT_MARK instead (pathological repetition). */
const LINK_CAP = 48;

const SHORT: Record<string, string> = {
  ' ': 'q',
  q: 'xq',
  x: 'xx',
  '&': 'xa',
  '.': 'xp',
  ',': 'xc',
  '-': 'xh',
  '(': 'xo',
  ')': 'xd',
  "'": 'xs',
  '"': 'xw',
  '/': 'xb',
  '+': 'xt',
  '!': 'xm',
  '@': 'xe',
  ':': 'xf',
  ';': 'xg',
  '*': 'xi',
  '#': 'xl',
  '?': 'xn',
  _: 'xu',
  '£': 'xv',
  '%': 'xr',
  $: 'xy',
};
// (`xj` is free; `xk` is END.)

/** The code word of one (folded) character. */
export function codeOf(ch: string): string {
  const short = SHORT[ch];
  if (short !== undefined) return short;
  if (ch.length === 1 && /[a-z0-9]/.test(ch)) return ch;
  return `xz${ch.codePointAt(0)!.toString(36).padStart(4, '0')}`;
}

/** Code words of the ASCII characters, looked up by char code (codesOf runs for every name indexed). */
const ASCII_CODES: readonly string[] = Array.from({ length: 128 }, (_, c) => codeOf(String.fromCharCode(c)));

function codesOf(folded: string): string[] {
  const out: string[] = [];
  for (const ch of folded) {
    const c = ch.charCodeAt(0);
    out.push(c < 128 ? ASCII_CODES[c]! : codeOf(ch));
  }
  return out;
}

/** The n-gram of `size` code words starting at i (concatenated: cheaper than slice and join). */
function gramAt(seq: readonly string[], i: number, size: number): string {
  let g = seq[i]!;
  for (let k = 1; k < size; k++) g += seq[i + k]!;
  return g;
}

function grams(seq: readonly string[], size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i + size <= seq.length; i++) out.push(gramAt(seq, i, size));
  return out;
}

/** Positions of each n-gram that occurs more than once (most names have none: no list is made for them). */
function repeats(seq: readonly string[], size: number): Map<string, number[]> {
  const first = new Map<string, number>();
  const at = new Map<string, number[]>();
  for (let i = 0; i + size <= seq.length; i++) {
    const g = gramAt(seq, i, size);
    const seen = first.get(g);
    if (seen === undefined) {
      first.set(g, i);
      continue;
    }
    const list = at.get(g);
    if (list) list.push(i);
    else at.set(g, [seen, i]);
  }
  return at;
}

/** False (size+2)-grams formed around repeated size-grams (see the module comment). */
function falseGrams(
  seq: readonly string[],
  rep: Map<string, number[]>,
  size: number,
  out: Set<string>,
): void {
  if (rep.size === 0) return;
  const genuine = new Set(grams(seq, size + 2));
  for (const [g, at] of rep) {
    for (const j1 of at) {
      if (j1 < 1) continue;
      for (const j2 of at) {
        if (j2 === j1 || j2 + size >= seq.length) continue;
        const fake = seq[j1 - 1]! + g + seq[j2 + size]!;
        if (!genuine.has(fake)) out.add(fake);
      }
    }
  }
}

export interface NameTerms {
  /** Distinct trigram words, in the order of the name. */
  words: string[];
  /** Filter values that make the name a suspect for some terms (usually none). */
  links: string[];
}

export function nameTerms(folded: string): NameTerms {
  const codes = codesOf(folded);
  const words = new Set<string>();
  // A word starts at every position; words near the end are padded with END, so a one- or
  // two-character term at the end of the name is still the prefix of a word.
  for (let i = 0; i < codes.length; i++) words.add(codes[i]! + (codes[i + 1] ?? END) + (codes[i + 2] ?? END));
  const links = new Set<string>();
  // A repeated trigram repeats its bigrams, a repeated 4-gram its trigrams: a name that repeats no
  // bigram (most names) has no link at all.
  const rep2 = repeats(codes, 2);
  if (rep2.size > 0) {
    falseGrams(codes, rep2, 2, links);
    const rep3 = repeats(codes, 3);
    if (rep3.size > 0) {
      falseGrams(codes, rep3, 3, links);
      for (const g of repeats(codes, 4).keys()) links.add(REPEAT_PREFIX + g);
    }
  }
  const linkList = links.size > LINK_CAP ? [SUSPECT_MARK] : [...links];
  return { words: [...words], links: linkList };
}

export type TermPlan =
  /** One or two code words: the prefix of a trigram word (Meilisearch's prefix search). */
  | { kind: 'prefix'; prefix: string }
  /** Every trigram of the term, and the links that mark the names to check. */
  | { kind: 'phrase'; words: string[]; links: string[] };

/** The query for "the folded name contains the folded term". */
export function planTerm(foldedTerm: string): TermPlan {
  const seq = codesOf(foldedTerm);
  if (seq.length <= 2) return { kind: 'prefix', prefix: seq.join('') };
  const words = [...new Set(grams(seq, 3))];
  const links = new Set<string>();
  if (seq.length >= 4) {
    for (const g of grams(seq, 4)) links.add(g);
    links.add(SUSPECT_MARK);
  }
  if (seq.length >= 5) for (const g of grams(seq, 5)) links.add(g);
  if (seq.length >= 6) {
    // Only an inner 4-gram's repetition can fake the whole term (docs/search.md).
    const fours = grams(seq, 4);
    for (let i = 1; i < fours.length - 1; i++) links.add(REPEAT_PREFIX + fours[i]!);
  }
  return { kind: 'phrase', words, links: [...links] };
}

/** The exact answer, for checking a candidate: does the folded name contain the folded term? */
export function termMatches(foldedName: string, foldedTerm: string): boolean {
  return foldedName.includes(foldedTerm);
}

/**
 * The `name` sort key: the folded name in an order-preserving code over [0-9a-z]. Meilisearch
 * compares sort strings after its own normalization (accents folded, some punctuation ignored),
 * which would make the order depend on the engine's version; on these strings its normalization
 * changes nothing, so `sort=name` is code-point order of the folded name, exactly.
 * Each character's code is monotone in its code point and no code is the start of another, so
 * comparing codes compares names, and "the name starts with q" is "the key starts with q's key",
 * a range: key(q) <= key < key(q) + '{' ('{' sorts after every character of a key).
 */
export function nameSortKey(folded: string): string {
  let out = '';
  for (const ch of folded) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0x61 && cp <= 0x79) out += ch;
    else if (cp < 0x30) out += `0${cp.toString(36).padStart(2, '0')}`;
    else if (cp <= 0x39) out += `1${ch}`;
    else if (cp < 0x61) out += `2${(cp - 0x3a).toString(36).padStart(2, '0')}`;
    else if (cp === 0x7a) out += 'z0';
    else out += `zz${cp.toString(36).padStart(4, '0')}`;
  }
  return out;
}

/** The folded name back from its sort key (nameSortKey is a prefix code: every key decodes once). */
export function decodeNameKey(key: string): string {
  let out = '';
  for (let i = 0; i < key.length; ) {
    const c = key[i]!;
    if (c >= 'a' && c <= 'y') {
      out += c;
      i += 1;
    } else if (c === '0') {
      out += String.fromCodePoint(Number.parseInt(key.slice(i + 1, i + 3), 36));
      i += 3;
    } else if (c === '1') {
      out += key[i + 1]!;
      i += 2;
    } else if (c === '2') {
      out += String.fromCodePoint(0x3a + Number.parseInt(key.slice(i + 1, i + 3), 36));
      i += 3;
    } else if (key.startsWith('z0', i)) {
      out += 'z';
      i += 2;
    } else if (key.startsWith('zz', i)) {
      out += String.fromCodePoint(Number.parseInt(key.slice(i + 2, i + 6), 36));
      i += 6;
    } else {
      throw new Error(`not a name key: ${JSON.stringify(key)}`);
    }
  }
  return out;
}
