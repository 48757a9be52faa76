import path from 'node:path';
import { type Command, Option } from 'commander';
import { ImportOptionsError } from '../../ingest/feed-handler.js';
import { feedHandler, feedNames } from '../../ingest/feeds.js';
import { isUrl } from '../../ingest/source.js';
import { assertCron, assertTimeZone, nextRun, ScheduleDefinitionError } from '../../jobs/schedules/cron.js';
import { lastBuildSize } from '../../jobs/schedules/index-builds.repository.js';
import {
  getSchedule,
  listSchedulesWithLastRun,
  removeSchedule,
  type ScheduleInput,
  upsertSchedule,
} from '../../jobs/schedules/schedule.repository.js';
import { removeScheduler, upsertScheduler } from '../../jobs/schedules/scheduler.js';
import { probeSource } from '../../jobs/schedules/source-fingerprint.js';
import { SourceTemplateError, SourceTemplates } from '../../jobs/schedules/source-template.js';
import { createDb, type Db } from '../../shared/db.js';
import type { ImportFeed } from '../../shared/tables.js';
import { CliError, cliConfig, databaseUrlOf } from '../cli-context.js';
import { withSchedulerQueue } from './schedule.queue.js';
import { builtView, checkNow, fmt, listText, scheduleView, showText } from './schedule.view.js';

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
  feed?: ImportFeed;
  source: string[];
  reindex?: boolean;
  verify?: boolean;
  whenGrown?: string;
  cron: string;
  tz: string;
  full?: boolean;
  country?: string;
  org?: string;
  maxGone?: string;
}

const cliError = (error: unknown): never => {
  if (error instanceof ScheduleDefinitionError || error instanceof SourceTemplateError)
    throw new CliError(error.message);
  if (error instanceof ImportOptionsError) throw new CliError(error.message);
  throw error;
};

/** The sources as stored: a relative path means "relative to here", but workers run elsewhere. */
function sourcesOf(feed: ImportFeed, given: readonly string[]): string[] {
  if (given.length === 0) throw new CliError('an import schedule needs --source (one or more)');
  const sources = given.map((s) => (isUrl(s) ? s : path.resolve(s)));
  const templates = (() => {
    try {
      return new SourceTemplates(sources);
    } catch (error) {
      return cliError(error);
    }
  })();
  // Placeholders stand for digits only, so one sample date shows whether every URL will parse.
  const sample = templates.expand({ year: 2000, month: 1, day: 1 }).flatMap((t) => t.sources);
  const bad = sample.find((s) => isUrl(s) && !URL.canParse(s));
  if (bad !== undefined) throw new CliError(`"${bad}" is not a valid URL`);
  if (sample.length > 1 && !feedHandler(feed)?.staged)
    throw new CliError(`the ${feed} feed takes one source per run (these make ${sample.length})`);
  return sources;
}

function validate(name: string, o: SetOptions): ScheduleInput {
  if (!NAME.test(name)) throw new CliError(`schedule name "${name}" must be 1-100 letters, digits, . _ -`);
  try {
    assertTimeZone(o.tz);
    assertCron(o.cron, o.tz);
  } catch (error) {
    cliError(error);
  }
  const base = { name, cron: o.cron.trim(), tz: o.tz };
  if (o.reindex) {
    if (o.feed) throw new CliError('give --feed (an import) or --reindex, not both');
    const importOnly = {
      '--source': o.source.length > 0,
      '--full': o.full,
      '--max-gone': o.maxGone,
      '--country': o.country,
      '--org': o.org,
    };
    const given = Object.entries(importOnly).find(([, v]) => v);
    if (given) throw new CliError(`${given[0]} is for imports (--feed), not --reindex`);
    if (o.verify && o.whenGrown !== undefined)
      throw new CliError('--when-grown decides when to rebuild; --verify only checks: give one');
    let whenGrown: number | null = null;
    if (o.whenGrown !== undefined) {
      whenGrown = Number(o.whenGrown);
      if (!/^\d+(\.\d+)?$/.test(o.whenGrown.trim()) || !(whenGrown > 1 && whenGrown <= 100))
        throw new CliError(`--when-grown "${o.whenGrown}" must be a multiple above 1, such as 1.3`);
    }
    return { ...base, job: o.verify ? 'reindex-verify' : 'reindex', whenGrown };
  }
  if (o.verify || o.whenGrown !== undefined)
    throw new CliError(`${o.verify ? '--verify' : '--when-grown'} goes with --reindex`);
  if (!o.feed) throw new CliError('give --feed <feed> (an import) or --reindex');
  // The feed's own option rules, exactly as `bizdir import` applies them.
  const handler = feedHandler(o.feed);
  if (!handler) throw new CliError(`unknown feed "${o.feed}" (known: ${feedNames().join(', ')})`);
  let options: ReturnType<typeof handler.parseOptions>;
  try {
    options = handler.parseOptions({ country: o.country, org: o.org, full: o.full, maxGone: o.maxGone });
  } catch (error) {
    return cliError(error);
  }
  return { ...base, feed: o.feed, sources: sourcesOf(o.feed, o.source), options };
}

const collect = (value: string, previous: string[]) => [...previous, value];

export function registerSchedule(program: Command): void {
  const schedule = program
    .command('schedule')
    .description('recurring feed imports and search index rebuilds (stored in Postgres)');

  schedule
    .command('set <name>')
    .description('create or replace a schedule: an import (--feed, --source) or a rebuild (--reindex)')
    .addOption(new Option('--feed <feed>', 'import this feed').choices(['registrar', 'locations']))
    .option(
      '--source <file|url>',
      'a source to import; repeat it for several. May be a template of the date: {yyyy} {mm} {dd}, ' +
        'and {1..7} for one source per number (the newest period whose sources all exist is read)',
      collect,
      [],
    )
    .option('--reindex', 'rebuild the search index and swap it in without downtime (bizdir reindex)')
    .option('--verify', 'with --reindex: only compare the index with Postgres (bizdir reindex --verify)')
    .option(
      '--when-grown <multiple>',
      "with --reindex: rebuild only once the index's files have grown past this multiple of a fresh build, per Org (e.g. 1.3)",
    )
    .requiredOption('--cron <expr>', 'cron expression, e.g. "0 3 * * *"')
    .option(
      '--tz <zone>',
      'IANA time zone the cron expression (and the dates of templates) are read in',
      'UTC',
    )
    .option('--full', 'each run is the full snapshot (see bizdir import --full)')
    .option('--max-gone <percent>', 'with --full: see bizdir import --max-gone')
    .option('--country <cc>', 'registrar feed: registration country')
    .option('--org <domain|company-number>', 'locations feed: the Org the rows belong to')
    .action(async (name: string, o: SetOptions) => {
      const input = validate(name, o);
      const saved = await withDb((db) => upsertSchedule(db, input));
      const applied = await withSchedulerQueue((queue) =>
        upsertScheduler(queue, saved.name, saved.cron, saved.tz),
      );
      console.log(`schedule ${saved.name} saved; next run ${fmt(nextRun(saved.cron, saved.tz))}`);
      const view = scheduleView({
        ...saved,
        last_run_id: null,
        last_run_status: null,
        last_run_at: null,
        last_run_error: null,
      });
      if (view.next_period !== null) {
        const all = view.sources.flatMap((s) => s.next);
        console.log(
          `it reads ${view.next_period} then (${all.length} source${all.length === 1 ? '' : 's'}), ` +
            `else the newest of ${view.fallback_periods.join(', ')} published; see bizdir schedule show ${saved.name}`,
        );
      }
      if (!applied) console.log('(Redis is not reachable: workers will apply it when they start)');
    });

  schedule
    .command('list')
    .description('schedules with their sources for the next run, next run, last run and its result')
    .option('--json', 'one JSON array')
    .action(async (o: { json?: boolean }) => {
      const views = (await withDb((db) => listSchedulesWithLastRun(db))).map((s) => scheduleView(s));
      if (o.json) console.log(JSON.stringify(views));
      else for (const line of listText(views)) console.log(line);
    });

  schedule
    .command('show <name>')
    .description('one schedule: its sources for the next run, and whether they are there now')
    .option('--json', 'one JSON object')
    .option('--no-check', 'do not look for the sources now (no requests)')
    .action(async (name: string, o: { json?: boolean; check: boolean }) => {
      const config = cliConfig();
      const { row, built } = await withDb(async (db) => ({
        row: (await listSchedulesWithLastRun(db, name))[0],
        built: await lastBuildSize(db, config.meiliIndex),
      }));
      if (!row) throw new CliError(`no schedule named ${name}`);
      const view = scheduleView(row);
      const check = view.job === 'import' && o.check ? await checkNow(view, probeSource) : null;
      // What a growth threshold compares with: the index's files right after its last build.
      const lastBuild = view.job === 'reindex' && built ? builtView(built) : null;
      if (o.json)
        console.log(
          JSON.stringify({
            ...view,
            ...(check ? { now: check } : {}),
            ...(lastBuild ? { last_build: lastBuild } : {}),
          }),
        );
      else for (const line of showText(view, check, lastBuild)) console.log(line);
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
