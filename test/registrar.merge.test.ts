import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { getRun, type ImportRun } from '../ingest/import-runs/import-runs.repository.js';
import { createImportRun } from '../ingest/import-runs/import-runs.state.js';
import { labelsFor } from '../ingest/registrar/registrar.labels.js';
import {
  createRunLabels,
  indexRunLabels,
  keptLabelsOf,
} from '../ingest/registrar/registrar.labels.repository.js';
import { createStage, dropStage, indexStage, stageExists } from '../ingest/registrar/registrar.stage.js';
import { IMPORT_JOB_CONNECTIONS } from '../ingest/run/deps.js';
import { runImport } from '../ingest/run/run-import.js';
import { workerPoolSize } from '../jobs/worker.js';
import { INDEX_JOB_CONNECTIONS, withIndexerLock } from '../search/index-sync.repository.js';
import { createDb, type Db } from '../shared/db.js';
import { createTestDb, type TestDb } from './support/db.js';
import { FEED_CONFIG } from './support/import.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';
import { registerState } from './support/registrar-state.js';
import { eventually } from './support/wait.js';

/**
 * The register merge writes several chunks side by side (ingest/run/merge.ts, `mergeLanes`) and
 * reserves public labels outside the chunk's transaction (public-domains.ts `reserveSlugs`).
 */
const dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-merge-'));
const file = (name: string, content: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
};
const num = (i: number) => String(i).padStart(8, '0');

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(async () => {
  await t?.drop();
});

async function clear(db: Db) {
  await sql`drop trigger if exists fail_once on orgs`.execute(db);
  await sql`truncate orgs, addresses, org_public_domains, public_slug_counters, import_rejects, import_runs restart identity cascade`.execute(
    db,
  );
}

async function run(db: Db, source: string, deps: { mergeLanes: number; mergeChunk: number }) {
  const created = await createImportRun(db, {
    feed: 'registrar',
    parts: [{ source, entry: null }],
    options: { country: 'GB', full: false },
  });
  return {
    id: created.id,
    done: () => runImport({ db, config: FEED_CONFIG, batchSize: 7, ...deps }, created.id),
  };
}

const counts = (r: ImportRun) => [r.rows_read, r.inserted, r.updated, r.unchanged, r.duplicates];

// 60 companies; some twice (the later row wins), some sharing a name (numbered labels).
const rows = [
  ...Array.from({ length: 60 }, (_, i) => registrarFields(num(i + 1), `COMPANY ${i % 45} LTD`)),
  registrarFields(num(7), 'COMPANY 7 RENAMED LTD'),
  registrarFields(num(33), 'COMPANY 33 LTD', { 'RegAddress.PostTown': 'YORK' }),
];

describe('register merge in lanes', () => {
  beforeEach(async () => {
    await clear(t.db);
  });

  it('gives the same records and counts with three lanes as with one, first import and changed re-import', async () => {
    const source = file('lanes.csv', registrarCsv(rows));
    const changed = file(
      'lanes-changed.csv',
      registrarCsv(rows.map((r, i) => (i % 4 === 0 ? { ...r, 'RegAddress.PostTown': 'HULL' } : r))),
    );
    const clean = await createTestDb();
    try {
      const one = { mergeLanes: 1, mergeChunk: 4 };
      const three = { mergeLanes: 3, mergeChunk: 4 };
      const ref = [
        await (await run(clean.db, source, one)).done(),
        await (await run(clean.db, changed, one)).done(),
      ];
      const got = [
        await (await run(t.db, source, three)).done(),
        await (await run(t.db, changed, three)).done(),
      ];
      expect(got.map(counts)).toEqual(ref.map(counts));
      expect(counts(got[0]!)).toEqual([62, 60, 0, 0, 2]);
      expect(got[1]!.updated).toBeGreaterThan(0);
      expect(await registerState(t.db)).toEqual(await registerState(clean.db));
    } finally {
      await clean.drop();
    }
  });

  it('commits chunks in key order: a chunk that fails rolls back the chunks after it, and the run resumes as one clean run', async () => {
    const source = file('fail.csv', registrarCsv(rows));
    const clean = await createTestDb();
    try {
      const reference = await (await run(clean.db, source, { mergeLanes: 1, mergeChunk: 4 })).done();
      // The Org of company 30 cannot be written once (a database error in the middle of a chunk,
      // while the chunks after it are being written by other lanes).
      await sql`create table if not exists fail_flag (done boolean)`.execute(t.db);
      await sql`truncate fail_flag`.execute(t.db);
      await sql`
        create or replace function fail_once() returns trigger language plpgsql as $$
        begin
          if new.registration_number = '00000030' and not exists (select 1 from fail_flag) then
            insert into fail_flag values (true);
            raise exception 'disk on fire';
          end if;
          return new;
        end $$`.execute(t.db);
      await sql`create trigger fail_once before insert on orgs for each row execute function fail_once()`.execute(
        t.db,
      );
      const r = await run(t.db, source, { mergeLanes: 3, mergeChunk: 4 });
      // The flag row is written in the failing transaction and rolled back with it: the trigger fails
      // every attempt until the flag is set from outside.
      await expect(r.done()).rejects.toThrow(/disk on fire/);
      const half = (await getRun(t.db, r.id))!;
      expect(half.status).toBe('running');
      // Every key up to the merge position is merged, none after it: later chunks did not commit.
      const after = half.merge_after!;
      expect(after < '00000030').toBe(true);
      const { rows: beyond } = await sql<{ n: string }>`
        select count(*) as n from orgs where registration_number > ${after}`.execute(t.db);
      expect(Number(beyond[0]!.n)).toBe(0);
      const { rows: upto } = await sql<{ n: string }>`
        select count(*) as n from orgs where registration_number <= ${after}`.execute(t.db);
      expect(Number(upto[0]!.n)).toBe(Number(after));
      await sql`insert into fail_flag values (true)`.execute(t.db);
      const resumed = await runImport({ db: t.db, config: FEED_CONFIG, mergeLanes: 3, mergeChunk: 4 }, r.id);
      expect(counts(resumed)).toEqual(counts(reference));
      expect(await registerState(t.db)).toEqual(await registerState(clean.db));
    } finally {
      await clean.drop();
    }
  });

  it('a label taken by another writer after it was reserved: the chunk is merged again with the next label', async () => {
    const source = file(
      'race.csv',
      registrarCsv(Array.from({ length: 9 }, (_, i) => registrarFields(num(i + 1), `HARBOUR ${i} LTD`))),
    );
    // Another writer's new Org takes 'harbour-4-ltd' in a transaction it has not committed when the
    // import reserves its labels: the taken check cannot see it, the import's insert waits on it, and
    // fails once it commits. The other writer commits as soon as an import insert waits on it.
    const other = await t.db.connection().execute(async (conn) => {
      await sql`begin`.execute(conn);
      await sql`
        insert into orgs (domain_cc, public_slug, name, content_hash)
        values ('gb', 'harbour-4-ltd', 'HARBOUR 4 (ELSEWHERE)', 'x')`.execute(conn);
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(conn);
      const importing = (await run(t.db, source, { mergeLanes: 2, mergeChunk: 3 })).done();
      const waited = await eventually(
        async () => {
          const { rows: waiting } = await sql<{ n: number }>`
            select count(*)::int as n from pg_stat_activity
            where ${rows[0]!.pid}::int = any(pg_blocking_pids(pid))`.execute(t.db);
          return waiting[0]!.n > 0;
        },
        { timeoutMs: 30_000, pollMs: 50 },
      );
      await sql`commit`.execute(conn);
      return { importing, waited };
    });
    expect(other.waited).toBe(true);
    const done = await other.importing;
    expect(done).toMatchObject({ status: 'succeeded', inserted: 9, updated: 0, unchanged: 0 });
    const state = await registerState(t.db);
    expect(state.find((o) => o.registration_number === num(5))).toMatchObject({
      public_slug: 'harbour-4-ltd-2',
      slugs: ['harbour-4-ltd-2'],
      version_number: 1,
    });
    const slugs = state.filter((o) => o.registration_number !== null).map((o) => o.public_slug);
    expect(new Set(slugs).size).toBe(9);
  });
  it('a label written into the database by hand (no allocator counted it) is found at insert: merged again with the next label', async () => {
    await clear(t.db);
    // allocateSlugs looks up only the labels an allocator may have handed out before; this one was
    // not (its base has no counter), so the import's insert meets it on the unique key and the chunk is
    // merged again (a label race), then with 'harbour-0-ltd-2'.
    await sql`
      insert into orgs (domain_cc, public_slug, name, content_hash)
      values ('gb', 'harbour-0-ltd', 'HARBOUR 0 (BY HAND)', 'x')`.execute(t.db);
    const source = file(
      'by-hand.csv',
      registrarCsv(Array.from({ length: 4 }, (_, i) => registrarFields(num(i + 1), `HARBOUR ${i} LTD`))),
    );
    const done = await (await run(t.db, source, { mergeLanes: 2, mergeChunk: 2 })).done();
    expect(done).toMatchObject({ status: 'succeeded', inserted: 4, updated: 0, unchanged: 0 });
    const state = await registerState(t.db);
    expect(state.find((o) => o.registration_number === num(1))).toMatchObject({
      public_slug: 'harbour-0-ltd-2',
      version_number: 1,
    });
    expect(
      state
        .filter((o) => o.registration_number !== null)
        .map((o) => o.public_slug)
        .sort(),
    ).toEqual(['harbour-0-ltd-2', 'harbour-1-ltd', 'harbour-2-ltd', 'harbour-3-ltd']);
  });
});

describe('register merge on a worker-sized pool', () => {
  // The worker runs the index sync beside an import, on one pool: the sync holds the indexer lock on a
  // connection for as long as it runs, the import its feed lock, and each merge lane its transaction
  // plus a connection for label reservations. A pool of the old size (2 x concurrency + 2 = 4) had
  // every connection taken and the lanes waiting for one more, until the connect timeout failed the run.
  const reimportBesideSync = async (max: number) => {
    await clear(t.db);
    const first = rows.slice(0, 40);
    await (
      await run(t.db, file('pool-first.csv', registrarCsv(first)), { mergeLanes: 2, mergeChunk: 4 })
    ).done();
    // New companies and renames: both reserve labels outside the chunk's transaction.
    const next = [
      ...first.map((r, i) => (i % 3 === 0 ? { ...r, CompanyName: `${r.CompanyName} RENAMED ${i}` } : r)),
      ...Array.from({ length: 160 }, (_, i) => registrarFields(num(500 + i), `NEW COMPANY ${i} LTD`)),
    ];
    const source = file('pool-next.csv', registrarCsv(next));
    const pool = createDb(t.url, {
      max,
      connectionTimeoutMillis: 2_000,
      applicationName: 'bizdir-test-pool',
    });
    try {
      const reimport = await run(pool.db, source, { mergeLanes: 2, mergeChunk: 4 });
      const locked = await withIndexerLock(pool.db, true, () => reimport.done());
      return { locked, run: await getRun(t.db, reimport.id) };
    } finally {
      await pool.close();
    }
  };

  it('re-imports while the index sync holds its lock, with the pool the worker is given', async () => {
    expect(workerPoolSize(1)).toBeGreaterThanOrEqual(IMPORT_JOB_CONNECTIONS + INDEX_JOB_CONNECTIONS);
    const { locked, run: done } = await reimportBesideSync(workerPoolSize(1));
    expect(locked.locked).toBe(true);
    expect(done?.status).toBe('succeeded');
    expect(counts(done!)).toEqual([200, 160, 14, 26, 0]);
  });
});

describe('register labels the run has handed out and not written', () => {
  /**
   * An Org that already holds `slug` as its label (its public_slug), handed out as an allocator hands
   * labels out: its base's counter counts it (`slug` here is a plain label, number 1 of its base).
   */
  async function holding(slug: string, name: string) {
    await sql`
      insert into orgs (domain_cc, public_slug, name, content_hash)
      values ('gb', ${slug}, ${name}, 'x')`.execute(t.db);
    await sql`
      insert into public_slug_counters (scope, base, last) values ('org', ${slug}, 1)
      on conflict (scope, base) do update set last = greatest(public_slug_counters.last, 1)`.execute(t.db);
  }
  /** One company's label, as a chunk of run `runId` would plan it (with the label the run kept for it). */
  async function labelOf(runId: number, number: string, base: string) {
    const kept = (await keptLabelsOf(t.db, runId, [number])).get(number) ?? null;
    const [label] = await labelsFor(t.db, runId, [{ number, base, kept }]);
    return label;
  }

  it('never hands out a label the run handed out to another company and has not written yet', async () => {
    await clear(t.db);
    const runId = 910_000;
    for (const id of [runId, runId + 1]) {
      await createStage(t.db, id);
      await indexStage(t.db, id);
      await createRunLabels(t.db, id);
      // As at the end of the run's label pass (registrar.labels.ts labelRun), before any chunk.
      await indexRunLabels(t.db, id);
    }
    try {
      // 'foo-ltd' is held: the next company called FOO LTD would get 'foo-ltd-2' ...
      await holding('foo-ltd', 'FOO LTD');
      // ... but the run handed 'foo-ltd-2' to FOO LTD 2 (its plain label), not written yet (invisible to
      // the Orgs). Had another company been given it too, the chunk writing it second would wait for
      // the first one's transaction, which may be waiting for this chunk's commit.
      expect(await labelOf(runId, '00000002', 'foo-ltd-2')).toBe('foo-ltd-2');
      expect(await labelOf(runId, '00000001', 'foo-ltd')).toBe('foo-ltd-3');
      // A chunk merged again gets the labels the run kept for its companies.
      expect(await labelOf(runId, '00000001', 'foo-ltd')).toBe('foo-ltd-3');
      expect(await labelOf(runId, '00000002', 'foo-ltd-2')).toBe('foo-ltd-2');
      // Unless another writer took one since: that company gets the next one, kept for the run instead.
      await holding('foo-ltd-3', 'FOO LTD ELSEWHERE');
      expect(await labelOf(runId, '00000001', 'foo-ltd')).toBe('foo-ltd-4');
      expect((await keptLabelsOf(t.db, runId, ['00000001'])).get('00000001')).toBe('foo-ltd-4');
      // Two chunks planned side by side, each reserving afresh for a BAR LTD: never the same label.
      await holding('bar-ltd', 'BAR LTD');
      for (let round = 0; round < 5; round++) {
        const [first, second] = await Promise.all([
          labelOf(runId, `0000010${round}`, 'bar-ltd'),
          labelOf(runId, `0000020${round}`, 'bar-ltd'),
        ]);
        expect(first).not.toBe(second);
      }
      // 'foo-ltd-4', handed out by the run as FOO LTD's fourth: another run's labels are not this run's,
      // so its FOO LTD 4 gets the plain label ...
      expect(await labelOf(runId + 1, '00000003', 'foo-ltd-4')).toBe('foo-ltd-4');
      // ... while for the run's own FOO LTD 4 it is taken.
      expect(await labelOf(runId, '00000004', 'foo-ltd-4')).toBe('foo-ltd-4-2');
    } finally {
      await dropStage(t.db, runId);
      await dropStage(t.db, runId + 1);
    }
  });
});

describe('register stage', () => {
  it('is created once when several parts start at the same moment', async () => {
    // `create table if not exists` racing with itself fails on pg_type's unique index; parts take turns.
    for (let round = 0; round < 5; round++) {
      const runId = 900_000 + round;
      const results = await Promise.allSettled(Array.from({ length: 8 }, () => createStage(t.db, runId)));
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(await stageExists(t.db, runId)).toBe(true);
      await dropStage(t.db, runId);
    }
  });
});
