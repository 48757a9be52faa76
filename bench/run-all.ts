import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BenchRow, PARSERS, renderTable } from './bench-table.js';

/**
 * `npm run bench [-- --quick] [--only import,api,...]`: runs every `bench:*` script of package.json
 * that exists, one after the other (they would skew each other in parallel), shows their own output
 * on stderr as it comes, and prints one table (figure, baseline, ratio, target) on stdout, then the
 * same rows as one JSON line for machines.
 *
 * `--quick` runs smaller sizes (a smoke run of the benchmarks, minutes instead of an hour); the
 * figures are then only indicative, and the table says so.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const QUICK: Record<string, { args: string[]; env: Record<string, string> }> = {
  import: { args: ['100000'], env: {} },
  api: { args: ['20000', '5', '1'], env: {} },
  register: { args: ['--orgs', '50000', '--queries', '200'], env: {} },
  locations: { args: [], env: { BENCH_ROWS: '20000', BENCH_ORGS: '1000' } },
  'locations-cpu': { args: [], env: { BENCH_ROWS: '20000', BENCH_REPS: '1' } },
  events: { args: ['--events', '100000', '--orgs', '50000', '--reads', '200', '--rounds', '1'], env: {} },
  webhooks: { args: ['--events', '5000', '--receivers', '10', '--down-seconds', '10'], env: {} },
};

function benchScripts(): string[] {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    scripts?: Record<string, string>;
  };
  return Object.keys(pkg.scripts ?? {})
    .filter((s) => s.startsWith('bench:'))
    .map((s) => s.slice('bench:'.length));
}

function run(name: string, quick: boolean): Promise<{ code: number | null; out: string }> {
  const extra = quick ? QUICK[name] : undefined;
  const args = ['run', `bench:${name}`, ...(extra?.args.length ? ['--', ...extra.args] : [])];
  return new Promise((resolve) => {
    const child = spawn('npm', args, {
      cwd: ROOT,
      env: { ...process.env, ...(extra?.env ?? {}) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
      process.stderr.write(d);
    });
    child.on('close', (code) => resolve({ code, out }));
  });
}

async function main() {
  const argv = process.argv.slice(2);
  const quick = argv.includes('--quick');
  const onlyAt = argv.indexOf('--only');
  const only = onlyAt >= 0 ? new Set((argv[onlyAt + 1] ?? '').split(',').filter(Boolean)) : undefined;
  const names = benchScripts().filter((n) => !only || only.has(n));
  const rows: BenchRow[] = [];
  const failures: Array<{ bench: string; reason: string }> = [];
  for (const name of names) {
    const parse = PARSERS[name];
    process.stderr.write(`\n=== npm run bench:${name}${quick ? ' (quick sizes)' : ''}\n`);
    const { code, out } = await run(name, quick);
    const found = parse ? parse(out) : [];
    rows.push(...found);
    if (code !== 0) failures.push({ bench: name, reason: `exited with code ${code}` });
    else if (!parse)
      failures.push({ bench: name, reason: 'no reader for its output in bench/bench-table.ts' });
    else if (found.length === 0)
      failures.push({ bench: name, reason: 'printed no figure this runner knows' });
  }
  process.stdout.write(`\n${quick ? 'QUICK RUN (small sizes; figures indicative only)\n' : ''}`);
  process.stdout.write(`${renderTable(rows, failures)}\n`);
  process.stdout.write(`${JSON.stringify({ quick, rows, failures })}\n`);
  process.exitCode = failures.length > 0 ? 1 : 0;
}

await main();
