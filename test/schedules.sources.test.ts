import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForRun } from '../bin/commands/import-run.wait.js';
import { getRun } from '../ingest/import-runs/import-runs.repository.js';
import { runScheduleProcessor } from '../jobs/schedules/run-schedule.processor.js';
import { upsertSchedule } from '../jobs/schedules/schedule.repository.js';
import type { RunScheduleOutcome } from '../jobs/schedules/scheduler.js';
import { type RunningWorkers, startWorkers } from '../jobs/worker.js';
import { createRedis } from '../shared/redis.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';
import { scheduleFiring } from './support/schedules.js';
import { inProcessWorkerDeps } from './support/worker.js';
import { makeZip } from './support/zip.js';

/**
 * The register as it is published, scheduled: one `--full` schedule of the monthly register in 7
 * part zips named by the month, served over HTTP on loopback (HEAD and byte ranges, as a static
 * file server does), fired through the real run-schedule processor, imported by a real worker.
 */
let t: TestDb;
const queue = testQueuePrefix();
const redis = createRedis(TEST_REDIS_URL, 'worker');
let running: RunningWorkers | undefined;
let fire: ReturnType<typeof runScheduleProcessor>;
let server: http.Server;
let base: string;
const files = new Map<string, Buffer>();

/** One month of the register: `numbers` companies, in 7 part zips of one CSV each. */
function publishMonth(yyyy: string, mm: string, numbers: number[], rename: Record<number, string> = {}) {
  const rows = numbers.map((n) =>
    registrarFields(`SC${String(n).padStart(6, '0')}`, rename[n] ?? `SCHEDULED COMPANY ${n} LIMITED`),
  );
  const per = Math.ceil(rows.length / 7);
  for (let part = 1; part <= 7; part++) {
    const name = `BasicCompanyData-${yyyy}-${mm}-01-part${part}_7`;
    const csv = registrarCsv(rows.slice((part - 1) * per, part * per));
    files.set(`/${name}.zip`, makeZip([{ name: `${name}.csv`, data: csv }]));
  }
}

beforeAll(async () => {
  t = await createTestDb();
  server = http.createServer((req, res) => {
    const body = files.get(req.url ?? '');
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    const headers = {
      'content-type': 'application/zip',
      etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`,
      'accept-ranges': 'bytes',
    };
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (range) {
      const start = Number(range[1]);
      const end = Math.min(Number(range[2]), body.length - 1);
      res
        .writeHead(206, {
          ...headers,
          'content-length': end - start + 1,
          'content-range': `bytes ${start}-${end}/${body.length}`,
        })
        .end(body.subarray(start, end + 1));
      return;
    }
    res.writeHead(200, { ...headers, 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const deps = inProcessWorkerDeps(t, queue.prefix, redis);
  fire = runScheduleProcessor(deps);
  running = startWorkers(deps, { queues: ['import'] });
  await upsertSchedule(t.db, {
    name: 'register',
    feed: 'registrar',
    sources: [`${base}/BasicCompanyData-{yyyy}-{mm}-01-part{1..7}_7.zip`],
    // Fired by hand below, each firing with its own slot: the cron never comes round in the test.
    cron: '0 6 2 * *',
    tz: 'Europe/London',
    options: { country: 'GB', full: true },
  });
});

afterAll(async () => {
  await running?.close(5_000);
  redis.disconnect();
  await queue.cleanup();
  await new Promise((resolve) => server?.close(resolve));
  await t?.drop();
});

/** One firing of the schedule, as BullMQ hands it to the processor (its last attempt). */
const fireAt = async (slot: string) =>
  (await fire(scheduleFiring('register', slot, `test-${slot}`), undefined, undefined)) as RunScheduleOutcome;

const settled = (runId: number) => waitForRun(t.db, runId, { pollMs: 50, timeoutMs: 90_000 });
const gone = async () =>
  (await t.db.selectFrom('orgs').select('id').where('left_register_on', 'is not', null).execute()).length;
const partsOfRun = (runId: number) =>
  t.db
    .selectFrom('import_run_parts')
    .select(['source', 'status', 'job_id'])
    .where('run_id', '=', runId)
    .orderBy('part_no')
    .execute();

const ALL = Array.from({ length: 70 }, (_, i) => i + 1);

describe('a schedule of the monthly register in 7 parts', () => {
  it('imports a complete month, skips it unchanged, refuses a month with a part missing, then reads the newest complete month', async () => {
    // November, complete.
    publishMonth('2026', '11', ALL);
    const first = await fireAt('2026-11-02T06:00:00Z');
    expect(first.outcome).toBe('queued');
    const firstId = (first as { runId: number }).runId;
    const november = await settled(firstId);
    expect(november).toMatchObject({ status: 'succeeded', scheduleName: 'register' });
    expect(november.counts).toMatchObject({ rowsRead: 70, inserted: 70, closed: 0 });
    const parts = await partsOfRun(firstId);
    expect(parts.map((p) => p.source)).toEqual(
      [1, 2, 3, 4, 5, 6, 7].map((n) => `${base}/BasicCompanyData-2026-11-01-part${n}_7.zip`),
    );
    // Queued as `bizdir import` queues parts: one import-part job each, under the run's own job.
    expect(parts.map((p) => [p.status, p.job_id])).toEqual(
      [1, 2, 3, 4, 5, 6, 7].map((n) => ['succeeded', `import-run-${firstId}-part-${n}`]),
    );
    expect((await getRun(t.db, firstId))?.job_id).toBe(`import-run-${firstId}`);

    // The next day: November again, unchanged.
    const again = await fireAt('2026-11-03T06:00:00Z');
    expect(again.outcome).toBe('skipped');
    expect((await getRun(t.db, (again as { runId: number }).runId))?.status).toBe('skipped');

    // December is being published: two companies left the register, part 3 is not there yet.
    const december = ALL.filter((n) => n !== 5 && n !== 66);
    publishMonth('2026', '12', december, { 7: 'RENAMED COMPANY 7 LIMITED' });
    files.delete('/BasicCompanyData-2026-12-01-part3_7.zip');
    const partial = await fireAt('2026-12-02T06:00:00Z');
    expect(partial.outcome).toBe('failed');
    const partialRun = await getRun(t.db, (partial as { runId: number }).runId);
    expect(partialRun?.status).toBe('failed');
    expect(partialRun?.error).toBe(
      `2026-12: missing: source 3 of 7, ${base}/BasicCompanyData-2026-12-01-part3_7.zip (HTTP 404 Not Found); nothing was imported`,
    );
    // Nothing read, nothing marked gone, nothing queued.
    expect(partialRun).toMatchObject({ rows_read: 0, closed: 0, job_id: null });
    expect(await partsOfRun(partialRun!.id)).toEqual([]);
    expect(await gone()).toBe(0);
    const renamed = await t.db
      .selectFrom('orgs')
      .select('name')
      .where('registration_number', '=', 'SC000007')
      .executeTakeFirstOrThrow();
    expect(renamed.name).toBe('SCHEDULED COMPANY 7 LIMITED');

    // January: nothing published for January yet; December is now complete, and is read.
    publishMonth('2026', '12', december, { 7: 'RENAMED COMPANY 7 LIMITED' });
    const jan = await fireAt('2027-01-02T06:00:00Z');
    expect(jan.outcome).toBe('queued');
    const decRun = await settled((jan as { runId: number }).runId);
    expect(decRun.status).toBe('succeeded');
    expect(decRun.source).toBe(
      [1, 2, 3, 4, 5, 6, 7].map((n) => `${base}/BasicCompanyData-2026-12-01-part${n}_7.zip`).join(' '),
    );
    expect(decRun.counts).toMatchObject({ rowsRead: 68, inserted: 0, updated: 1, closed: 2 });
    expect(await gone()).toBe(2);
  }, 180_000);
});
