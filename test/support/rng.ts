/**
 * The tests' deterministic random numbers: an LCG in exact 32-bit arithmetic (Math.imul), giving
 * floats in [0, 1). Written in doubles (`s * 1103515245 + 12345`, modulo 2^31) the product passes
 * 2^53, digits are lost, and the sequence cycles every 10,466 draws, so a property test's rounds
 * repeat one another (two tests did until 2026-11-28).
 */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** An integer in [0, n) from `random` (rng). */
export const below = (random: () => number, n: number) => Math.floor(random() * n);
