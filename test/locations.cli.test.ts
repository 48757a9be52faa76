import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import type { TestDb } from './support/db.js';
import { closeCliServices, openCliServices, type TestQueue, WorkerProcesses } from './support/worker.js';

/** `bizdir import locations` through the real CLI, queue and worker (the operator's two commands). */
let t: TestDb;
let queue: TestQueue;
let env: Record<string, string>;
const workers = new WorkerProcesses(() => env);

beforeAll(async () => {
  ({ t, queue, env } = await openCliServices());
  workers.start([]);
});

afterAll(() => closeCliServices({ t, queue }, workers, 'SIGTERM'));

// Each CLI call starts a process through tsx: slow on a busy machine, hence the generous timeouts.
describe('bizdir import locations', { timeout: 120_000 }, () => {
  it('imports the sample with --wait, prints counts, lists rejected rows with column and reason', async () => {
    const registrar = await runCli(['import', 'registrar', 'samples/registrar-sample.csv', '--wait'], env);
    expect(registrar.code).toBe(0);
    const first = await runCli(['import', 'locations', 'samples/locations-sample.csv', '--wait'], env);
    expect(first.stderr).not.toMatch(/bizdir:/);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(
      /import run 2 succeeded: 13 rows read: 11 inserted, 0 updated, 0 unchanged, 2 rejected/,
    );
    const show = await runCli(['imports', 'show', '2'], env);
    expect(show.stdout).toMatch(/line 15 {2}rejected {2}Business name: business name is empty/);
    expect(show.stdout).toMatch(/line 16 {2}rejected {2}Monday hours: "9 till late" is not a range/);
  });

  it('reads a gzipped sheet, and a re-import is a no-op', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bizdir-loc-cli-'));
    const gz = path.join(dir, 'locations.csv.gz');
    writeFileSync(gz, gzipSync(readFileSync('samples/locations-sample.csv')));
    const again = await runCli(['import', 'locations', gz, '--wait'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/0 inserted, 0 updated, 11 unchanged, 2 rejected/);
    const versions = await t.db.selectFrom('locations').select('version_number').distinct().execute();
    expect(versions).toEqual([{ version_number: 1 }]);
  });

  it('fails a sheet without a Store code column, exits non-zero and changes nothing', async () => {
    const before = await t.db.selectFrom('locations').selectAll().orderBy('id').execute();
    const bad = await runCli(
      ['import', 'locations', 'test/fixtures/locations-no-store-code.csv', '--wait'],
      env,
    );
    // Refused by the command before anything is recorded or queued (the header is read there).
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(
      /^bizdir: .*locations-no-store-code\.csv: Not a location sheet: missing required column Store code/,
    );
    expect(bad.stdout).not.toMatch(/queued/);
    expect(await t.db.selectFrom('locations').selectAll().orderBy('id').execute()).toEqual(before);
  });
});
