import { ACCENTED, PLACES, prng, SUFFIXES, SURNAMES, TRADES, WORDS } from '../org-names.js';

/**
 * Register-shaped company names whose vocabulary grows with the register, as the real one does
 * (new surnames, places and coined brand words keep appearing): besides the common words, most
 * names carry a coined word drawn from a pool that grows with N, skewed so some are frequent and
 * most are rare. Deterministic for a seed; every name is unique (a clash gets a number, as the
 * registrar would make the applicant choose another name).
 */
const ONSETS = [
  'b',
  'br',
  'c',
  'ch',
  'cl',
  'd',
  'dr',
  'f',
  'g',
  'gr',
  'h',
  'j',
  'k',
  'l',
  'm',
  'n',
  'p',
  'pr',
  'qu',
  'r',
  's',
  'sh',
  'st',
  't',
  'tr',
  'v',
  'w',
  'z',
];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'io', 'ou', 'y'];
const CODAS = ['', '', 'n', 'r', 'l', 's', 'x', 'rd', 'nt', 'ck', 'm', 'th'];
const SYLLABLES = ONSETS.flatMap((o) => VOWELS.flatMap((v) => CODAS.map((c) => o + v + c)));

/** A coined word per index: distinct indexes give distinct words (bijective base-|SYLLABLES|). */
export function coined(index: number): string {
  let n = index;
  let out = '';
  do {
    out += SYLLABLES[n % SYLLABLES.length];
    n = Math.floor(n / SYLLABLES.length);
  } while (n > 0);
  return out.toUpperCase();
}

const pick = <T>(rand: () => number, list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
const up = (s: string) => s.toUpperCase();

export class NameGenerator {
  private readonly rand: () => number;
  private readonly seen = new Set<string>();
  private readonly pool: number;

  constructor(seed: number, registerSize: number) {
    this.rand = prng(seed);
    // About 0.4 coined words per company in the pool; the skew leaves a long tail of rare words.
    this.pool = Math.max(1_000, Math.round(registerSize * 0.4));
  }

  private coinedWord(): string {
    const u = this.rand();
    return coined(Math.floor(u * u * this.pool));
  }

  private shape(): string {
    const rand = this.rand;
    const suffix = pick(rand, SUFFIXES);
    const brand = this.coinedWord();
    const r = rand();
    if (r < 0.22) return `${brand} ${up(pick(rand, TRADES))} ${suffix}`;
    if (r < 0.34) return `${up(pick(rand, SURNAMES))} ${brand} ${up(pick(rand, TRADES))} ${suffix}`;
    if (r < 0.44) return `${brand} ${up(pick(rand, PLACES))} ${suffix}`;
    if (r < 0.52) return `${up(pick(rand, WORDS))} ${brand} ${suffix}`;
    if (r < 0.6) return `${up(pick(rand, SURNAMES))} & ${brand} ${suffix}`;
    if (r < 0.66) return `${brand}'S ${up(pick(rand, TRADES))} ${suffix}`;
    if (r < 0.72) {
      const initials = String.fromCharCode(65 + Math.floor(rand() * 26), 65 + Math.floor(rand() * 26));
      return `${initials} ${brand} ${suffix}`;
    }
    if (r < 0.78) return `${brand} ${Math.floor(rand() * 99_999) + 1} ${suffix}`;
    if (r < 0.8) return `${pick(rand, ACCENTED)} ${brand} ${suffix}`;
    if (r < 0.85) return `THE ${brand} ${up(pick(rand, TRADES))} ${up(pick(rand, TRADES))} ${suffix}`;
    if (r < 0.9) return `${brand} (${up(pick(rand, PLACES))}) ${suffix}`;
    if (r < 0.95) return `${up(pick(rand, SURNAMES))}-${brand} ${up(pick(rand, TRADES))} ${suffix}`;
    return `${brand} ${this.coinedWord()} ${suffix}`;
  }

  /** Names this generator must not give (a register's names, for the companies added to it later). */
  avoid(names: Iterable<string>): void {
    for (const name of names) this.seen.add(name);
  }

  next(): string {
    const name = this.shape().replace(/\s+/g, ' ').trim();
    if (!this.seen.has(name)) {
      this.seen.add(name);
      return name;
    }
    for (let i = 2; ; i++) {
      const other = `${name} ${i}`;
      if (!this.seen.has(other)) {
        this.seen.add(other);
        return other;
      }
    }
  }
}
