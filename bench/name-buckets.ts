import { readFileSync } from 'node:fs';
import { foldName, nameSortKey } from '../search/name-text.js';
import { generateRegister } from './register/generate.js';

/**
 * How evenly prefixes of the name sort key split a generated register (a sort bucket is such a
 * prefix: org-document.ts nameBucket). For each width: the number of buckets, the five largest, the
 * size at the 1st percentile from the top, and the median.
 *
 *   node --max-old-space-size=8192 --import tsx bench/name-buckets.ts [--orgs 5700000] [--parts 7]
 */
const args = process.argv.slice(2);
const opt = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const reg = await generateRegister({
  orgs: opt('orgs', 1_000_000),
  parts: opt('parts', 1),
  dir: '/tmp/bizdir-register',
});
const keys = readFileSync(reg.namesFile, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((name) => nameSortKey(foldName(name)));
for (const width of [3, 4, 5, 6]) {
  const buckets = new Map<string, number>();
  for (const key of keys) {
    const b = key.slice(0, width);
    buckets.set(b, (buckets.get(b) ?? 0) + 1);
  }
  const sizes = [...buckets.values()].sort((a, b) => b - a);
  const at = (q: number) => sizes[Math.floor(sizes.length * q)];
  console.log(
    `width ${width}: ${buckets.size} buckets, largest ${sizes.slice(0, 5).join(', ')}; 1st percentile ${at(0.01)}, median ${at(0.5)}`,
  );
}
