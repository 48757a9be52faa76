import { promises as fs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextRun } from '../jobs/schedules/cron.js';
import { SCHEDULE_QUEUE } from '../jobs/schedules/scheduler.js';
import { dateIn } from '../jobs/schedules/source-template.js';
import { runCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';

/** `bizdir schedule set|list|show` with several sources, templates of the date, and reindex schedules. */
let tdb: TestDb;
let tmp: string;
let env: Record<string, string>;
const queue = testQueuePrefix();
let server: http.Server;
let base: string;
const published = new Set<string>();

beforeAll(async () => {
  tdb = await createTestDb();
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'bizdir-sched-cli-'));
  env = {
    DATABASE_URL: tdb.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: queue.prefix,
    DATA_DIR: tmp,
    MEILI_INDEX: 'sched_cli_orgs',
  };
  server = http.createServer((req, res) => res.writeHead(published.has(req.url ?? '') ? 200 : 404).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await queue.cleanup();
  await tdb.drop();
  await fs.rm(tmp, { recursive: true, force: true });
});

const set = (name: string, ...args: string[]) => runCli(['schedule', 'set', name, ...args], env);
/** The month of `d` in London, as the schedule below reads its templates. */
const month = (d: Date) => {
  const { year, month: m } = dateIn(d, 'Europe/London');
  return `${year}-${String(m).padStart(2, '0')}`;
};

describe('bizdir schedule set', () => {
  it.each([
    [['--source', '/feeds/{yyyy}-{month}.csv'], 'unknown placeholder {month} (known: {yyyy} {mm} {dd}'],
    [['--source', '/feeds/part{3..1}.csv'], 'the range {3..1} runs backwards'],
    [['--source', '/feeds/part{1..101}.csv'], 'the range {1..101} makes 101 sources; at most 100'],
    [['--source', 'https://exa mple.test/{yyyy}.csv'], 'is not a valid URL'],
    [[], 'an import schedule needs --source'],
  ])('refuses an import schedule with %j', async (args, message) => {
    const r = await set('bad', '--feed', 'registrar', '--cron', '0 6 * * *', ...args);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(message);
  });

  it('refuses several sources for a feed read one source per run, and mixed or misplaced flags', async () => {
    const loc = await set(
      'bad',
      '--feed',
      'locations',
      '--org',
      'acme.gb.bizdir.test',
      '--source',
      '/f/{1..2}.csv',
      '--cron',
      '0 6 * * *',
    );
    expect(loc.stderr).toContain('the locations feed takes one source per run (these make 2)');
    const both = await set('bad', '--feed', 'registrar', '--reindex', '--cron', '0 6 * * *');
    expect(both.stderr).toContain('give --feed (an import) or --reindex, not both');
    const full = await set('bad', '--reindex', '--full', '--cron', '0 6 * * *');
    expect(full.stderr).toContain('--full is for imports (--feed), not --reindex');
    const verify = await set(
      'bad',
      '--feed',
      'registrar',
      '--source',
      '/f.csv',
      '--verify',
      '--cron',
      '0 6 * * *',
    );
    expect(verify.stderr).toContain('--verify goes with --reindex');
    const grown = await set('bad', '--reindex', '--when-grown', '0.9', '--cron', '0 6 * * *');
    expect(grown.stderr).toContain('--when-grown "0.9" must be a multiple above 1');
    for (const r of [loc, both, full, verify, grown]) expect(r.code).toBe(1);
    expect(await tdb.db.selectFrom('import_schedules').select('name').execute()).toEqual([]);
  }, 60_000);
});

describe('bizdir schedule list and show', () => {
  it('show each source as written and as the next run resolves it, the last run, the next time', async () => {
    const template = `${base}/BasicCompanyData-{yyyy}-{mm}-01-part{1..7}_7.zip`;
    const saved = await set(
      'monthly-register',
      '--feed',
      'registrar',
      '--source',
      template,
      '--source',
      `${base}/extra.csv`,
      '--cron',
      '0 6 * * *',
      '--tz',
      'Europe/London',
      '--full',
      '--max-gone',
      '5',
    );
    expect(saved.stderr).toBe('');
    const next = nextRun('0 6 * * *', 'Europe/London');
    expect(saved.stdout).toContain(`it reads ${month(next)} then (8 sources)`);
    const reindex = await set('weekly-reindex', '--reindex', '--when-grown', '1.3', '--cron', '0 4 * * 0');
    expect(reindex.stdout).toContain('schedule weekly-reindex saved');
    const check = await set('nightly-check', '--reindex', '--verify', '--cron', '30 4 * * *');
    expect(check.code).toBe(0);

    const list = JSON.parse((await runCli(['schedule', 'list', '--json'], env)).stdout) as Array<
      Record<string, unknown>
    >;
    expect(list.map((s) => [s.name, s.job])).toEqual([
      ['monthly-register', 'import'],
      ['nightly-check', 'reindex-verify'],
      ['weekly-reindex', 'reindex'],
    ]);
    const register = list[0]!;
    const parts = [1, 2, 3, 4, 5, 6, 7].map(
      (n) => `${base}/BasicCompanyData-${month(next)}-01-part${n}_7.zip`,
    );
    expect(register).toMatchObject({
      feed: 'registrar',
      source: `${template} ${base}/extra.csv`,
      sources: [
        { template, next: parts },
        { template: `${base}/extra.csv`, next: [`${base}/extra.csv`] },
      ],
      next_period: month(next),
      options: { country: 'GB', full: true, max_gone: 5 },
      last_run: null,
    });
    expect(register.fallback_periods).toHaveLength(3);
    expect(list[2]).toMatchObject({
      feed: null,
      sources: [],
      when_grown: 1.3,
      next_run: expect.stringMatching(/T04:00:00Z$/),
    });

    const table = await runCli(['schedule', 'list'], env);
    expect(table.stdout).toMatch(
      /monthly-register\s+registrar --full --max-gone 5\s+0 6 \* \* \* \(Europe\/London\)/,
    );
    expect(table.stdout).toMatch(/weekly-reindex\s+reindex --when-grown 1.3\s+0 4 \* \* 0 \(UTC\)/);
    expect(table.stdout).toMatch(/nightly-check\s+reindex --verify/);
    expect(table.stdout).toContain(`monthly-register: the next run reads ${month(next)}`);
    expect(table.stdout).toContain(parts[6]);

    // Now: this month's parts all there but part 3, and the extra file.
    const now = new Date();
    published.clear();
    published.add('/extra.csv');
    for (const n of [1, 2, 4, 5, 6, 7]) published.add(`/BasicCompanyData-${month(now)}-01-part${n}_7.zip`);
    const shown = JSON.parse((await runCli(['schedule', 'show', 'monthly-register', '--json'], env)).stdout);
    expect(shown.now).toMatchObject({ result: 'incomplete', period: month(now) });
    expect(shown.now.message).toContain(
      `missing: source 3 of 8, ${base}/BasicCompanyData-${month(now)}-01-part3_7.zip (HTTP 404`,
    );
    published.add(`/BasicCompanyData-${month(now)}-01-part3_7.zip`);
    const text = await runCli(['schedule', 'show', 'monthly-register'], env);
    expect(text.stdout).toContain(`now        ${month(now)}: all 8 sources are there`);
    expect(text.stdout).toContain(`sources    ${template}`);
    // A reindex schedule shows what its growth threshold compares with: the size after the last build.
    await tdb.db
      .insertInto('index_build_sizes')
      .values({ index_uid: 'sched_cli_orgs', documents: 1000, bytes: 1_380_000 })
      .execute();
    const weekly = await runCli(['schedule', 'show', 'weekly-reindex'], env);
    expect(weekly.stdout).toMatch(/^job +reindex --when-grown 1.3$/m);
    expect(weekly.stdout).toMatch(/^last build 1380 B\/Org on disk \(1000 Orgs, 1380000 bytes\), \S+Z$/m);
    const missing = await runCli(['schedule', 'show', 'nope'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no schedule named nope');

    // Every schedule, reindex ones included, has its BullMQ job scheduler.
    const q = new Queue(SCHEDULE_QUEUE, { connection: { url: TEST_REDIS_URL }, prefix: queue.prefix });
    const schedulers = await q.getJobSchedulers(0, -1);
    await q.close();
    expect(schedulers.map((s) => s.key).sort()).toEqual([
      'schedule:monthly-register',
      'schedule:nightly-check',
      'schedule:weekly-reindex',
    ]);
  }, 120_000);
});
