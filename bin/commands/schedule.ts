import path from 'node:path';
import { type Command, Option } from 'commander';
import { ImportOptionsError } from '../../ingest/feed-handler.js';
import { feedHandler, feedNames } from '../../ingest/feeds.js';
import { assertCron, assertTimeZone, nextRun, ScheduleDefinitionError } from '../../jobs/schedules/cron.js';
import {
  getSchedule,
  listSchedulesWithLastRun,
  removeSchedule,
  type ScheduleWithLastRun,
  upsertSchedule,
} from '../../jobs/schedules/schedule.repository.js';
import { removeScheduler, upsertScheduler } from '../../jobs/schedules/scheduler.js';
import { createDb, type Db } from '../../shared/db.js';
import type { ImportFeed, ImportOptionsJson } from '../../shared/tables.js';
import { CliError, cliConfig, databaseUrlOf } from '../cli-context.js';
import { withSchedulerQueue } from './schedule.queue.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  const { db, close } = createDb(databaseUrlOf(cliConfig()), { max: 1, applicationName: 'bizdir-schedule' });
  try {
    return await fn(db);
  } finally {
    await close();
  }
}

interface SetOptions {
  feed: ImportFeed;
  source: string;
  cron: string;
  tz: string;
  full?: boolean;
  country?: string;
  org?: string;
  maxGone?: string;
}

function validate(name: string, o: SetOptions): ImportOptionsJson {
  if (!NAME.test(name)) throw new CliError(`schedule name "${name}" must be 1-100 letters, digits, . _ -`);
  try {
    assertTimeZone(o.tz);
    assertCron(o.cron, o.tz);
  } catch (error) {
    if (error instanceof ScheduleDefinitionError) throw new CliError(error.message);
    throw error;
  }
  // The feed's own option rules, exactly as `bizdir import` applies them.
  const handler = feedHandler(o.feed);
  if (!handler) throw new CliError(`unknown feed "${o.feed}" (known: ${feedNames().join(', ')})`);
  try {
    return handler.parseOptions({ country: o.country, org: o.org, full: o.full, maxGone: o.maxGone });
  } catch (error) {
    if (error instanceof ImportOptionsError) throw new CliError(error.message);
    throw error;
  }
}

const fmt = (d: Date | null | undefined) => (d ? d.toISOString().replace(/\.\d{3}Z$/, 'Z') : '-');

function listRow(s: ScheduleWithLastRun) {
  return {
    name: s.name,
    feed: s.feed,
    source: s.source,
    cron: s.cron,
    tz: s.tz,
    options: s.options,
    next_run: fmt(nextRun(s.cron, s.tz)),
    last_run:
      s.last_run_id === null
        ? null
        : { id: s.last_run_id, at: fmt(s.last_run_at), result: s.last_run_status },
  };
}

function printTable(rows: ReturnType<typeof listRow>[]): void {
  if (rows.length === 0) {
    console.log('no schedules (add one with: bizdir schedule set <name> --feed ... --source ... --cron ...)');
    return;
  }
  const table = rows.map((r) => ({
    name: r.name,
    feed: r.feed + (r.options.full ? ' --full' : ''),
    cron: `${r.cron} (${r.tz})`,
    'next run': r.next_run,
    'last run': r.last_run ? `#${r.last_run.id} ${r.last_run.at}` : '-',
    result: r.last_run?.result ?? '-',
    source: r.source,
  }));
  const headers = Object.keys(table[0]!) as (keyof (typeof table)[number])[];
  const widths = headers.map((h) => Math.max(h.length, ...table.map((r) => String(r[h]).length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  console.log(line(headers.map(String)));
  for (const r of table) console.log(line(headers.map((h) => String(r[h]))));
}

export function registerSchedule(program: Command): void {
  const schedule = program.command('schedule').description('recurring feed imports (stored in Postgres)');

  schedule
    .command('set <name>')
    .description('create or replace a schedule')
    .addOption(
      new Option('--feed <feed>', 'feed kind').choices(['registrar', 'locations']).makeOptionMandatory(),
    )
    .requiredOption('--source <file|url>', 'feed file (path) or http(s) URL')
    .requiredOption('--cron <expr>', 'cron expression, e.g. "0 3 * * *"')
    .option('--tz <zone>', 'IANA time zone the cron expression is read in', 'UTC')
    .option('--full', 'each run is the full snapshot (see bizdir import --full)')
    .option('--max-gone <percent>', 'with --full: see bizdir import --max-gone')
    .option('--country <cc>', 'registrar feed: registration country')
    .option('--org <domain|company-number>', 'locations feed: the Org the rows belong to')
    .action(async (name: string, o: SetOptions) => {
      const options = validate(name, o);
      // A relative path means "relative to here", but workers run elsewhere: store it absolute.
      const source = /^https?:\/\//i.test(o.source) ? o.source : path.resolve(o.source);
      const saved = await withDb((db) =>
        upsertSchedule(db, { name, feed: o.feed, source, cron: o.cron.trim(), tz: o.tz, options }),
      );
      const applied = await withSchedulerQueue((queue) =>
        upsertScheduler(queue, saved.name, saved.cron, saved.tz),
      );
      console.log(`schedule ${saved.name} saved; next run ${fmt(nextRun(saved.cron, saved.tz))}`);
      if (!applied) console.log('(Redis is not reachable: workers will apply it when they start)');
    });

  schedule
    .command('list')
    .description('schedules with their next run, last run and its result')
    .option('--json', 'one JSON array')
    .action(async (o: { json?: boolean }) => {
      const rows = (await withDb(listSchedulesWithLastRun)).map(listRow);
      if (o.json) console.log(JSON.stringify(rows));
      else printTable(rows);
    });

  schedule
    .command('remove <name>')
    .description('delete a schedule (its past runs stay in bizdir imports)')
    .action(async (name: string) => {
      const removed = await withDb(async (db) => (await getSchedule(db, name)) && removeSchedule(db, name));
      if (!removed) throw new CliError(`no schedule named ${name}`);
      const applied = await withSchedulerQueue((queue) => removeScheduler(queue, name));
      console.log(`schedule ${name} removed`);
      if (!applied) console.log('(Redis is not reachable: workers will drop it when they start)');
    });
}
