import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * How the benchmarks run `bizdir` processes (workers, the API): as users run them (`node
 * dist/bin/bizdir.js`, built first by buildBizdir), or from source through tsx
 * (`BENCH_WORKER=tsx`). tsx is a development tool: its loader and transpiled sources cost a worker
 * about 60 MB more at rest (docs/journal/2026-11-26.md, 16:28), and the preparing thread loads
 * tsx once more, so memory figures measured from source overstate what users see.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
if (process.env.BENCH_WORKER !== undefined && !['tsx', 'dist'].includes(process.env.BENCH_WORKER))
  throw new Error('BENCH_WORKER is tsx or dist');
export const FROM_SOURCE = process.env.BENCH_WORKER === 'tsx';

/** Builds dist/ (tsc, as `npm run build`) so the processes run the code of this checkout; returns ms. */
export function buildBizdir(): number {
  if (FROM_SOURCE) return 0;
  const t = Date.now();
  execFileSync(
    process.execPath,
    [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: ROOT,
      stdio: 'inherit',
    },
  );
  return Date.now() - t;
}

/** Node's arguments that start `bizdir` (before its own), run from ROOT. */
export const BIZDIR_ARGS: readonly string[] = FROM_SOURCE
  ? ['--import', 'tsx', 'bin/bizdir.ts']
  : ['dist/bin/bizdir.js'];

/** How the processes run, for a report. */
export const BIZDIR_HOW = FROM_SOURCE
  ? 'from source through tsx (BENCH_WORKER=tsx)'
  : 'dist/bin/bizdir.js, as users run them';
