import { readFileSync } from 'node:fs';
import type { OrgRowForIndex } from '../../search/org-document.js';
import { generateRegister } from './generate.js';

/**
 * The Orgs the search labs index (format-lab, sort-buckets, sort-levels): the generated register's
 * names (cached under /tmp/bizdir-register), stable ids from a fixed seed, and one `updated` per
 * 5,000 Orgs one second apart, as import transactions write them.
 */
export async function labRows(orgs: number): Promise<OrgRowForIndex[]> {
  const reg = await generateRegister({ orgs, parts: 1, dir: '/tmp/bizdir-register' });
  const names = readFileSync(reg.namesFile, 'utf8').split('\n').filter(Boolean);
  let seed = 7;
  const rand = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  return names.map((name, i) => ({
    id: i + 1,
    uid: Math.floor(rand() * 36 ** 8)
      .toString(36)
      .padStart(8, '0'),
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
