import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRun } from '../ingest/import-runs/import-runs.repository.js';
import { runImport } from '../ingest/run/run-import.js';
import { createDb } from '../shared/db.js';
import { createTestDb, type TestDb } from './support/db.js';
import { FEED_CONFIG, importFeed } from './support/import.js';

/**
 * A location run writes two batches at once (two transactions on two connections, committed in sheet
 * order). Its oracle: the same sheet in the same batches loaded one after the other (as before), into a
 * database of its own. The sheet has
 * store codes that come back in later batches (under the same Org and under another), new Orgs met
 * again in the next batch, labels that clash, and a refused row whose key comes back.
 */

const HEADER = 'Store code,Business name,Address line 1,Locality,Country / Region,Monday hours';
const ORGS = ['Pipe Bakery', 'Pipe Books', 'Pipe Tacos'];
const CITIES = ['York', 'Leeds', 'York', 'Hull'];

function sheetRows(): string[] {
  const rows: string[] = [];
  for (let i = 0; i < 60; i++) {
    const org = ORGS[i % 3]!;
    // Every 7th row names a code of 9 rows before (a repeat, maybe in the batch before); row 20 is refused.
    const code = i % 7 === 6 ? `P-${i - 9}` : `P-${i}`;
    const hours = i === 20 ? 'whenever' : '09:00-17:00';
    rows.push(`${code},${org},${i} Pipe Lane,${CITIES[i % 4]},GB,${hours}`);
  }
  // The refused row's key again, now good.
  rows.push('P-20,Pipe Tacos,20 Pipe Lane,Leeds,GB,09:00-17:00');
  return rows;
}

interface Snapshot {
  counts: Record<string, number | null>;
  rows: unknown[];
}

async function snapshot(db: TestDb['db'], runId: number): Promise<Snapshot> {
  const run = (await getRun(db, runId))!;
  const { rows } = await sql`
    select o.name, l.code, l.public_slug, l.version_number, l.is_default, l.closed_date, a.city,
      rank() over (order by l.id) as id_order,
      (select array_agg(s.slug order by s.slug) from (select d.slug from location_public_domains d
        where d.location_id = l.id union select l.public_slug) s) as labels
    from locations l join orgs o on o.id = l.org_id join addresses a on a.id = l.address_id
    order by o.name, l.code`.execute(db);
  const counters =
    await sql`select base, last from public_slug_counters where scope = 'location' order by base`.execute(db);
  const { status, rows_read, inserted, updated, unchanged, rejected, warnings, duplicates, closed } = run;
  return {
    counts: { rows_read, inserted, updated, unchanged, rejected, warnings, duplicates, closed, status: null },
    rows: [status, ...rows, ...counters.rows],
  };
}

describe('a location sheet loaded two batches at a time', () => {
  let oracle: TestDb;
  let piped: TestDb;
  let killed: TestDb;
  let file: string;
  let expected: Snapshot;

  beforeAll(async () => {
    [oracle, piped, killed] = await Promise.all([createTestDb(), createTestDb(), createTestDb()]);
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bizdir-loc-pipe-'));
    file = path.join(dir, 'sheet.csv');
    await fs.writeFile(file, `${HEADER}\r\n${sheetRows().join('\r\n')}\r\n`);
    const run = await importFeed(oracle.db, 'locations', file, {
      batchSize: 4,
      full: true,
      batchesInFlight: 1,
    });
    expected = await snapshot(oracle.db, run.id);
  });
  afterAll(async () => {
    await Promise.all([oracle?.drop(), piped?.drop(), killed?.drop()]);
  });

  it('ends as the same batches loaded one at a time: counts, Locations, ids in sheet order, labels, counters', async () => {
    expect(expected.counts).toMatchObject({ rows_read: 61, rejected: 1, duplicates: 6 });
    const run = await importFeed(piped.db, 'locations', file, {
      batchSize: 4,
      full: true,
      batchesInFlight: 2,
    });
    expect(await snapshot(piped.db, run.id)).toEqual(expected);
  });

  it('resumes after its connections are killed with a batch in flight, with the counts of one clean run', async () => {
    let commits = 0;
    // The worker "dies" after the third commit: every other connection of the run is cut, the batch
    // in flight with them (mid-statement or waiting for the one before), and the worker stops there.
    // The batch after the third may also have committed already (its four rows are quick): then no
    // connection was busy, the pool would open fresh ones and the run would go on to succeed (seen
    // once on Node 24), so the dying worker also stops by throwing, as a crash would stop it.
    const kill = async () => {
      if (++commits !== 3) return;
      await sql`select pg_terminate_backend(pid) from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()`.execute(killed.db);
      throw new Error('the worker died after its third commit');
    };
    await expect(
      importFeed(killed.db, 'locations', file, {
        batchSize: 4,
        full: true,
        batchesInFlight: 2,
        onBatchCommitted: kill,
      }),
    ).rejects.toThrow();
    // The restarted worker has connections of its own: the killed pool may still hand out a
    // connection whose termination it has not noticed yet (ECONNRESET on its first query).
    const handle = createDb(killed.url, { max: 5, applicationName: 'bizdir-test' });
    const restarted = handle.db;
    try {
      const { id } = await restarted
        .selectFrom('import_runs')
        .select('id')
        .orderBy('id', 'desc')
        .executeTakeFirstOrThrow();
      const stopped = (await getRun(restarted, id))!;
      expect(stopped.status).toBe('running');
      expect(stopped.checkpoint_rows).toBeGreaterThan(0);
      expect(stopped.checkpoint_rows).toBeLessThan(61);
      const run = await runImport(
        { db: restarted, config: FEED_CONFIG, batchSize: 4, batchesInFlight: 2 },
        id,
      );
      expect(await snapshot(restarted, run.id)).toEqual(expected);
    } finally {
      await handle.close();
    }
  });
});
