import { readFileSync } from 'node:fs';
import type { OrgRowForIndex } from '../../search/org-document.js';
import { bizdirUid } from '../../shared/domains.js';
import { generateRegister } from './generate.js';

/**
 * The Orgs the search labs index (format-lab, sort-buckets, sort-levels): the generated register's
 * names (cached under /tmp/bizdir-register), the stable ids of ids 1..N, and one `updated` per
 * 5,000 Orgs one second apart, as import transactions write them.
 */
export async function labRows(orgs: number): Promise<OrgRowForIndex[]> {
  const reg = await generateRegister({ orgs, parts: 1, dir: '/tmp/bizdir-register' });
  const names = readFileSync(reg.namesFile, 'utf8').split('\n').filter(Boolean);
  // The stable ids the product gives ids 1, 2, 3, ... (one per Org, as in the register bench). Until
  // 2026-11-28 they came from an LCG whose products overflowed 2^53, which cycled after 14,469
  // distinct values: at 1M every `d` was shared by about 69 Orgs, so the labs understated what the
  // unique `d` costs and sorted its ties in Meilisearch's own order.
  return names.map((name, i) => ({
    id: i + 1,
    uid: bizdirUid(i + 1),
    name,
    updated: new Date(1.7e12 + Math.floor(i / 5_000) * 1_000),
    version_number: 1,
  }));
}

/** The value after `--orgs` on the command line, or `fallback`. */
export function orgsArg(fallback: number): number {
  const args = process.argv.slice(2);
  const at = args.indexOf('--orgs');
  const n = at >= 0 ? Number(args[at + 1]) : fallback;
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--orgs: expected a positive integer, got ${args[at + 1]}`);
  return n;
}
