import type { Command } from 'commander';
import { listIssues } from '../../ingest/import-runs/import-issues.repository.js';
import { getRun, type ImportRun, listRuns } from '../../ingest/import-runs/import-runs.repository.js';
import { partLocation } from '../../ingest/import-runs/import-runs.state.js';
import { createDb, type Db } from '../../shared/db.js';
import { CliError, cliConfig, databaseUrlOf } from '../cli-context.js';
import { countsLine } from './import-follow.js';
import { viewRun, viewRuns } from './import-run.view.js';

// Typed loosely: the generated-column types of database.ts do not unwrap to Date (pg gives a Date).
const iso = (d: unknown) =>
  d instanceof Date || typeof d === 'string' ? new Date(d).toISOString().replace(/\.\d+Z$/, 'Z') : '-';

async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  const { db, close } = createDb(databaseUrlOf(cliConfig()), { max: 1, applicationName: 'bizdir-imports' });
  try {
    return await fn(db);
  } finally {
    await close();
  }
}

function printList(runs: ImportRun[]) {
  if (runs.length === 0) {
    console.log('no import runs yet');
    return;
  }
  const rows = runs.map((r) => [
    String(r.id),
    r.feed,
    r.status,
    iso(r.created_at),
    String(r.rows_read),
    String(r.inserted),
    String(r.updated),
    String(r.unchanged),
    String(r.rejected),
    String(r.warnings),
    r.source,
  ]);
  const head = [
    'id',
    'feed',
    'status',
    'created',
    'rows',
    'new',
    'changed',
    'same',
    'rejected',
    'warnings',
    'source',
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  console.log(line(head));
  for (const r of rows) console.log(line(r));
}

async function show(db: Db, id: number, limit: number) {
  const run = await getRun(db, id);
  if (!run) throw new CliError(`no import run ${id}`);
  const view = (await viewRun(db, id))!;
  console.log(`import run ${run.id}: ${run.feed} ${run.status}`);
  if (view.parts.length <= 1) console.log(`  source    ${run.source}`);
  for (const p of view.parts.length > 1 ? view.parts : []) {
    const c = p.counts;
    console.log(
      `  part ${p.partNo}  ${p.status}  ${partLocation(p)}: ${c.rowsRead} rows, ${c.rejected} rejected, ` +
        `${c.inserted} inserted, ${c.updated} updated, ${c.unchanged} unchanged${p.error ? ` (${p.error})` : ''}`,
    );
  }
  console.log(`  options   ${JSON.stringify(run.options)}`);
  console.log(
    `  created   ${iso(run.created_at)}  started ${iso(run.started_at)}  finished ${iso(run.finished_at)}`,
  );
  console.log(`  counts    ${countsLine(run)}`);
  if (run.error) console.log(`  error     ${run.error}`);
  const issues = await listIssues(db, id, limit);
  const total = run.rejected + run.warnings;
  if (issues.length === 0) return;
  console.log(`rejected rows and warnings (${issues.length} of ${total}):`);
  for (const i of issues) {
    const where = i.column_name ? `${i.column_name}: ` : '';
    const part = view.parts.length > 1 ? `part ${i.part_no} ` : '';
    console.log(`  ${part}line ${i.line_number}  ${i.severity}  ${where}${i.reason}`);
    if (i.severity === 'rejected' && i.raw) {
      console.log(`    ${i.raw.length > 300 ? `${i.raw.slice(0, 300)}...` : i.raw}`);
    }
  }
}

/** Run ids are Postgres bigints handed out from 1; anything past 2^53 is no id this tool can name. */
const positiveInt = (name: string) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value)))
    throw new CliError(`${name} must be a positive integer (at most ${Number.MAX_SAFE_INTEGER})`);
  return Number(value);
};

/** `bizdir imports [list | show <id>]`: runs, their counts, rejected rows and warnings. */
export function registerImports(program: Command): void {
  const imports = program
    .command('imports')
    .description('list import runs, or show one with its rejected rows');
  imports
    .command('list', { isDefault: true })
    .description('the latest import runs')
    .option('--limit <n>', 'how many runs', positiveInt('--limit'), 20)
    .option('--json', 'one JSON array, newest first: each run with its parts, counts, status and timings')
    .action(async (opts: { limit: number; json?: boolean }) =>
      withDb(async (db) => {
        if (opts.json) console.log(JSON.stringify(await viewRuns(db, opts.limit)));
        else printList(await listRuns(db, opts.limit));
      }),
    );
  imports
    .command('show')
    .description('one run: counts, error, rejected rows and warnings with line and reason')
    .argument('<id>', 'import run id', positiveInt('id'))
    .option('--limit <n>', 'how many rejected rows and warnings', positiveInt('--limit'), 200)
    .option('--json', 'the run as one JSON object: status, counts, timings, its parts, and its issues')
    .action(async (id: number, opts: { limit: number; json?: boolean }) =>
      withDb(async (db) => {
        if (!opts.json) return show(db, id, opts.limit);
        const view = await viewRun(db, id);
        if (!view) throw new CliError(`no import run ${id}`);
        const issues = (await listIssues(db, id, opts.limit)).map((i) => ({
          part: i.part_no,
          line: i.line_number,
          severity: i.severity,
          column: i.column_name,
          reason: i.reason,
          raw: i.raw,
        }));
        console.log(JSON.stringify({ ...view, issues }));
      }),
    );
}
