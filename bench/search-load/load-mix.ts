import { foldName } from '../../search/name-text.js';
import { prng } from '../org-names.js';
import { coined } from '../register/names.js';

/**
 * The hard mix for the load step (bench/search-load/search-load.ts), as distinct queries: every kind
 * of term (words, word starts, mid-word pieces, pieces across a word boundary, one and two
 * characters, whole names, absent terms), every sort, offsets 0, 100 and 9,900, limit 20. No
 * (term, sort, offset) is asked twice, so a cache of answers gains nothing on it; the skewed mix
 * (a few queries asked again and again) is built apart.
 */
export interface LoadQuery {
  kind: string;
  q: string;
  sort: string;
  offset: number;
}

export const SORTS = ['name', '-name', 'updated', '-updated', 'relevance'] as const;
export const OFFSETS = [0, 100, 9_900] as const;
export const LIMIT = 20;

/** The kinds of term, each a generator over the names (seeded). */
function kinds(names: readonly string[], rand: () => number): [string, () => string][] {
  const pickName = () => names[Math.floor(rand() * names.length)]!;
  const pickWord = () => {
    const w = pickName()
      .split(' ')
      .filter((x) => x.length >= 2);
    return (w[Math.floor(rand() * w.length)] ?? 'ltd').toLowerCase();
  };
  const longWord = () => {
    for (let i = 0; i < 20; i++) {
      const w = pickWord();
      if (w.length >= 6) return w;
    }
    return 'limited';
  };
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return [
    ['word', pickWord],
    ['word start', () => pickWord().slice(0, 2 + Math.floor(rand() * 4))],
    [
      'mid-word',
      () => {
        const w = longWord();
        const len = 3 + Math.floor(rand() * 4);
        const at = 1 + Math.floor(rand() * Math.max(1, w.length - len - 1));
        return w.slice(at, at + len);
      },
    ],
    [
      'across words',
      () => {
        const n = pickName();
        const sp = n.indexOf(' ', Math.floor(rand() * Math.max(1, n.length - 2)));
        const at = sp > 1 ? sp : n.indexOf(' ');
        return at > 1
          ? n.slice(Math.max(0, at - 1 - Math.floor(rand() * 3)), at + 2 + Math.floor(rand() * 3))
          : n;
      },
    ],
    ['1 char', () => alphabet[Math.floor(rand() * alphabet.length)]!],
    ['2 chars', () => alphabet[Math.floor(rand() * 26)]! + alphabet[Math.floor(rand() * alphabet.length)]!],
    ['whole name', pickName],
    ['absent coined', () => coined(50_000_000 + Math.floor(rand() * 1e7)).toLowerCase()],
    ['absent', () => `zq${Math.floor(rand() * 1e7)}x`],
  ];
}

const keyOf = (m: Pick<LoadQuery, 'q' | 'sort' | 'offset'>) =>
  `${m.sort}\u0000${m.offset}\u0000${foldName(m.q)}`;

/**
 * `count` distinct queries, the kinds in equal shares where a kind has that many distinct queries
 * (one character has 36 × 15), the rest filled by the others; shuffled with a fixed seed so kinds,
 * sorts and offsets are interleaved over the run.
 */
export function distinctMix(names: readonly string[], count: number, seed = 4242): LoadQuery[] {
  const rand = prng(seed);
  const gens = kinds(names, rand);
  const seen = new Set<string>();
  const out: LoadQuery[] = [];
  const share = Math.ceil(count / gens.length);
  const perKind = new Map<string, number>();
  for (let round = 0; out.length < count && round < 50; round++) {
    for (const [kind, gen] of gens) {
      let misses = 0;
      while ((perKind.get(kind) ?? 0) < share * (round + 1) && out.length < count && misses < 200) {
        const q = gen().toLowerCase();
        const m = {
          kind,
          q,
          sort: SORTS[Math.floor(rand() * SORTS.length)]!,
          offset: OFFSETS[Math.floor(rand() * OFFSETS.length)]!,
        };
        const key = keyOf(m);
        if (foldName(q) === '' || seen.has(key)) {
          misses++;
          continue;
        }
        seen.add(key);
        out.push(m);
        perKind.set(kind, (perKind.get(kind) ?? 0) + 1);
      }
    }
  }
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * The skewed mix: `count` queries drawn from `distinct` queries of the hard mix (the first ones of
 * `from`), the i-th most popular asked about 1/i as often as the first (a Zipf law, as real search
 * traffic is), so a few queries make most of the load.
 */
export function skewedMix(
  from: readonly LoadQuery[],
  distinct: number,
  count: number,
  seed = 77,
): LoadQuery[] {
  const rand = prng(seed);
  const pool = from.slice(0, distinct);
  const weights = pool.map((_, i) => 1 / (i + 1));
  const sum = weights.reduce((a, b) => a + b, 0);
  const cumulative: number[] = [];
  let acc = 0;
  for (const w of weights) {
    acc += w / sum;
    cumulative.push(acc);
  }
  return Array.from({ length: count }, () => {
    const r = rand();
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < r) lo = mid + 1;
      else hi = mid;
    }
    return pool[lo]!;
  });
}

/**
 * The total of each of `terms` (folded) over the folded names: the truth every total of the API is
 * checked against.
 */
export function bruteForce(names: readonly string[], terms: Iterable<string>): Map<string, number> {
  const folded = names.map(foldName);
  const truth = new Map<string, number>();
  for (const t of terms) {
    const f = foldName(t);
    if (truth.has(f)) continue;
    let n = 0;
    for (const name of folded) if (name.includes(f)) n++;
    truth.set(f, n);
  }
  return truth;
}
