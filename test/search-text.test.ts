import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  codeOf,
  decodeNameKey,
  foldName,
  nameSortKey,
  nameTerms,
  planTerm,
  SUSPECT_MARK,
  termMatches,
} from '../search/name-text.js';
import { domainBucket, firstCharacter, nameBucket, updatedThenBucket } from '../search/org-document.js';
import { rng } from './support/rng.js';

/**
 * The index's promises, checked on many generated names and terms over a tiny alphabet (so that
 * repeated bigrams and trigrams, the hard case, are everywhere):
 * - no false negatives: a name containing the term holds every word of the term's query;
 * - false candidates are marked: a name holding every word without containing the term carries
 *   one of the term's links, so the search checks it instead of counting it.
 */
const SMALL = fc.constantFrom('a', 'b', ' ', 'é', 'q', 'x', '&');
const text = (min: number, max: number, chars = SMALL) =>
  fc.array(chars, { minLength: min, maxLength: max }).map((a) => a.join(''));
/** Two letters: repeated bigrams and trigrams in nearly every name. */
const TWO = fc.constantFrom('a', 'b', 'a', 'b', ' ');

/** What Meilisearch would answer for one name: every phrase word present, or a word with the prefix. */
function candidate(name: string, term: string): boolean {
  const terms = nameTerms(name);
  const plan = planTerm(term);
  if (plan.kind === 'prefix') return terms.words.some((w) => w.startsWith(plan.prefix));
  const words = new Set(terms.words);
  return plan.words.every((w) => words.has(w));
}

function suspect(name: string, term: string): boolean {
  const plan = planTerm(term);
  if (plan.kind === 'prefix') return false;
  const links = new Set(nameTerms(name).links);
  return plan.links.some((l) => links.has(l));
}

function compareCodePoints(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

describe('name text', () => {
  it('folds case and whitespace runs, keeps accents', () => {
    expect(foldName('ZEBRA \t HOLDINGS')).toBe('zebra holdings');
    expect(foldName('Cafe\u0301')).toBe('café');
    expect(foldName(' ltd')).toBe(' ltd');
  });

  it('writes characters in a prefix code over [a-z0-9]', () => {
    const codes = ['a', 'q', 'x', ' ', '&', 'é', '\u{1F600}', '9', '^'].map(codeOf);
    for (const c of codes) expect(c).toMatch(/^[a-z0-9]+$/);
    for (const a of codes) for (const b of codes) if (a !== b) expect(b.startsWith(a)).toBe(false);
  });

  it('every trigram word is three code words, so Meilisearch never splits or joins them', () => {
    const { words } = nameTerms(foldName('A&B (UK) LTD £5 ÉTÉ'));
    for (const w of words) expect(w).toMatch(/^[a-z0-9]{3,18}$/);
  });

  it('a name containing the term is always a candidate (no false negatives)', () => {
    fc.assert(
      fc.property(text(0, 12), text(1, 6), text(0, 12), (before, term, after) => {
        const name = `${before}${term}${after}`;
        expect(termMatches(name, term)).toBe(true);
        expect(candidate(name, term)).toBe(true);
      }),
      { numRuns: 3000, seed: 11 },
    );
  });

  it('a false candidate always carries one of the term links (so it gets checked)', () => {
    let falseCandidates = 0;
    fc.assert(
      fc.property(text(0, 24, TWO), text(1, 9, TWO), (name, term) => {
        if (candidate(name, term) && !termMatches(name, term)) {
          falseCandidates++;
          expect(suspect(name, term)).toBe(true);
        }
      }),
      { numRuns: 20_000, seed: 12 },
    );
    // The generator does produce the hard case.
    expect(falseCandidates).toBeGreaterThan(20);
  });

  it('every false candidate carries a term link: all names over {a, b} up to 13 characters, terms of 4-8', () => {
    // Exhaustive where random names rarely reach: terms long enough that only a repeated inner
    // 4-gram can fake them (all their 4- and 5-grams really in the name, the term not).
    const all = (len: number): string[] =>
      len === 0 ? [''] : all(len - 1).flatMap((s) => [`${s}a`, `${s}b`]);
    const names = Array.from({ length: 14 }, (_, n) => all(n)).flat();
    const terms = [4, 5, 6, 7, 8].flatMap(all);
    const indexed = names.map((name) => {
      const t = nameTerms(name);
      return { name, words: new Set(t.words), links: new Set(t.links) };
    });
    let falseCandidates = 0;
    let missed = 0;
    for (const term of terms) {
      const plan = planTerm(term);
      if (plan.kind !== 'phrase') continue;
      for (const n of indexed) {
        if (!plan.words.every((w) => n.words.has(w)) || n.name.includes(term)) continue;
        falseCandidates++;
        if (!plan.links.some((l) => n.links.has(l))) missed++;
      }
    }
    expect(falseCandidates).toBeGreaterThan(1000);
    expect(missed).toBe(0);
  });

  it("a name is a suspect for a long term only when it repeats one of that term's inner 4-grams", () => {
    // "united" repeats "ited", the last 4-gram of "limited": it cannot fake "limited".
    expect(suspect(foldName('UNITED SUPPLIES LIMITED'), 'limited')).toBe(false);
    expect(suspect(foldName('UNITED SUPPLIES LIMITED'), 'nited s')).toBe(true);
  });

  it('the name key of a name starts with the key of every prefix of it (relevance ranges)', () => {
    fc.assert(
      fc.property(text(0, 12), text(0, 12), (a, b) => {
        expect(nameSortKey(a + b).startsWith(nameSortKey(a))).toBe(true);
        expect(nameSortKey(a + b) < `${nameSortKey(a)}{`).toBe(true);
      }),
      { numRuns: 2000, seed: 14 },
    );
  });

  it('the name sort key orders like the code points of the folded name, in [0-9a-z]', () => {
    const any = fc
      .array(
        fc.constantFrom('a', 'z', 'y', ' ', '0', '9', '&', '(', 'é', 'É', '~', '\u{1F600}', 'ß', ':', '_'),
        {
          maxLength: 8,
        },
      )
      .map((a) => foldName(a.join('')));
    fc.assert(
      fc.property(any, any, (x, y) => {
        const kx = nameSortKey(x);
        const ky = nameSortKey(y);
        expect(kx).toMatch(/^[0-9a-z]*$/);
        const byCodePoint = Math.sign(compareCodePoints(x, y));
        expect(Math.sign(kx < ky ? -1 : kx > ky ? 1 : 0)).toBe(byCodePoint);
      }),
      { numRuns: 5000, seed: 13 },
    );
  });

  it('name buckets sort as the keys they cut, crowded prefixes and first characters included (formats 6 and 7)', () => {
    const any = fc
      .array(fc.constantFrom('t', 'h', 'e', 'a', 'z', ' ', '0', '&', 'é', 'q'), { maxLength: 10 })
      .map((a) => nameSortKey(foldName(a.join(''))));
    // Names starting "the" are many; make them most of the cases.
    const key = fc.oneof(
      any,
      any.map((k) => nameSortKey('the') + k),
    );
    fc.assert(
      fc.property(key, key, (x, y) => {
        expect(x.startsWith(nameBucket(x))).toBe(true);
        expect(nameBucket(x).startsWith(firstCharacter(x))).toBe(true);
        if (x <= y) expect(nameBucket(x) <= nameBucket(y)).toBe(true);
        if (x <= y) expect(firstCharacter(x) <= firstCharacter(y)).toBe(true);
      }),
      { numRuns: 5000, seed: 15 },
    );
    // "the", the space (00w), then three more characters of the key.
    expect(nameBucket(nameSortKey(foldName('THE ACME LTD')))).toBe('the00wacm');
    expect(nameBucket(nameSortKey(foldName('THEATRE LTD')))).toBe('theatre00');
    expect(nameBucket(nameSortKey(foldName('HARBOUR LTD')))).toBe('har');
    expect(firstCharacter(nameSortKey(foldName('THE ACME LTD')))).toBe('t');
    // The stable domain's buckets: its first character, then its first two.
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9a-z]{8}$/), fc.stringMatching(/^[0-9a-z]{8}$/), (x, y) => {
        expect(domainBucket(x).startsWith(firstCharacter(x))).toBe(true);
        if (x <= y) expect(firstCharacter(x) <= firstCharacter(y)).toBe(true);
      }),
      { numRuns: 2000, seed: 16 },
    );
  });

  it('updated then the stable domain bucket, as one number, orders as the two keys (format 7)', () => {
    const uid = fc.stringMatching(/^[0-9a-z]{8}$/);
    // Today's dates, and ones past 2^41 ms (2039), where the fraction is rounded.
    const ms = fc.oneof(
      fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
      fc.integer({ min: 2 ** 41 - 10, max: 2 ** 44 }),
    );
    const cmp = (a: number | string, b: number | string) => (a < b ? -1 : a > b ? 1 : 0);
    fc.assert(
      fc.property(ms, uid, ms, uid, (m1, d1, m2, d2) => {
        const x = updatedThenBucket(m1, d1);
        const y = updatedThenBucket(m2, d2);
        const asc = cmp(m1, m2) || cmp(domainBucket(d1), domainBucket(d2));
        const desc = cmp(m2, m1) || cmp(domainBucket(d1), domainBucket(d2));
        // Exact below 2^41 ms; past it neighbouring buckets may tie, never swap.
        if (m1 < 2 ** 41 && m2 < 2 ** 41) {
          expect(cmp(x.ua, y.ua)).toBe(asc);
          expect(cmp(y.ud, x.ud)).toBe(desc);
        } else {
          expect(cmp(x.ua, y.ua) * asc).toBeGreaterThanOrEqual(0);
          expect(cmp(y.ud, x.ud) * desc).toBeGreaterThanOrEqual(0);
          if (m1 !== m2) expect(cmp(x.ua, y.ua)).toBe(cmp(m1, m2));
        }
      }),
      { numRuns: 5000, seed: 17 },
    );
    // Same ms, buckets the extremes.
    expect(updatedThenBucket(1_700_000_000_000, '00aaaaaa').ua).toBe(1_700_000_000_000);
    expect(updatedThenBucket(1_700_000_000_000, 'zzaaaaaa').ud).toBe(1_700_000_000_000);
  });

  it('a pathologically repetitive name is a suspect for every term of four or more characters', () => {
    const name = foldName('AB'.repeat(40) + 'BA'.repeat(40) + 'ABBA'.repeat(20));
    const { links } = nameTerms(name);
    expect(links.length).toBeLessThanOrEqual(48);
    if (links.includes(SUSPECT_MARK)) expect(links).toEqual([SUSPECT_MARK]);
  });
});

describe('decodeNameKey', () => {
  it('gives back every folded name from its sort key (the suspects are checked on it)', () => {
    const rand = rng(7);
    // Every class of the code: a-y, z, digits, below '0', between '9' and 'a', above 'z', astral.
    const alphabet = [..."abcxyz0189 &'()-.,/:;@_`{|}~é£\u00ff\u0100\u4e2d\u{1F600}\u{10FFFF}"];
    let checked = 0;
    for (let i = 0; i < 5000; i++) {
      const len = Math.floor(rand() * 20);
      const name = Array.from({ length: len }, () => alphabet[Math.floor(rand() * alphabet.length)]!).join(
        '',
      );
      const folded = foldName(name);
      expect(decodeNameKey(nameSortKey(folded))).toBe(folded);
      checked++;
    }
    expect(checked).toBe(5000);
    expect(() => decodeNameKey('z1')).toThrow(/not a name key/);
  });
});
