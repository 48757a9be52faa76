import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAccount } from '../../api/accounts/account.service.js';
import { apiKeyPrefix, hashApiKey, hashesEqual } from '../../api/credits/api-key.js';
import { findLiveKeyByPrefix } from '../../api/credits/api-key.repository.js';
import { hasImportRuns } from '../../api/ops/import-runs.read-model.js';
import { pendingIndexChanges } from '../../api/ops/search-outbox.read-model.js';
import { feedHandler } from '../../ingest/feeds.js';
import { setRunJobId } from '../../ingest/import-runs/import-runs.repository.js';
import { createImportRun, isSettled } from '../../ingest/import-runs/import-runs.state.js';
import { enqueueImportRun, type TypedQueue } from '../../jobs/queue.js';
import type { Db } from '../../shared/db.js';
import type { Logger } from '../../shared/logger.js';
import type { ImportFeed } from '../../shared/tables.js';
import type { RunView } from './import-run.view.js';
import { waitForRun } from './import-run.wait.js';

// The package root, from bin/commands (source) or dist/bin/commands (built).
const here = path.dirname(fileURLToPath(import.meta.url));
export const SAMPLES_DIR = path.resolve(
  here,
  here.includes(`${path.sep}dist${path.sep}`) ? '../../..' : '../..',
  'samples',
);

/** Registrar first: location rows name their Org by company number, which the registrar feed creates. */
const SAMPLES: ReadonlyArray<{ feed: ImportFeed; file: string }> = [
  { feed: 'registrar', file: 'registrar-sample.csv' },
  { feed: 'locations', file: 'locations-sample.csv' },
];

/** A database that has never had an import run is new: that is when the samples are loaded. */
export async function isFreshDatabase(db: Db): Promise<boolean> {
  return !(await hasImportRuns(db));
}

/**
 * Imports the sample feeds shipped in samples/ as ordinary import runs through the queue (so they
 * show in `bizdir imports` and on the dashboard), and waits for the in-process worker to finish them.
 */
export async function importSamples(db: Db, queue: TypedQueue<'import'>, log: Logger): Promise<RunView[]> {
  const runs: number[] = [];
  for (const sample of SAMPLES) {
    const handler = feedHandler(sample.feed);
    if (!handler) throw new Error(`no feed handler for ${sample.feed}`);
    const source = path.join(SAMPLES_DIR, sample.file);
    const run = await createImportRun(db, {
      feed: sample.feed,
      parts: [{ source, entry: null }],
      options: handler.parseOptions({}),
    });
    await setRunJobId(db, run.id, await enqueueImportRun(queue, run.id));
    runs.push(run.id);
  }
  const finished: RunView[] = [];
  for (const id of runs) {
    const run = await waitForRun(db, id, { pollMs: 200, timeoutMs: 120_000 });
    if (!isSettled(run.status)) {
      log.warn({ runId: id }, 'sample import still running; the service starts anyway');
      continue;
    }
    finished.push(run);
    log.info(
      {
        runId: id,
        feed: run.feed,
        status: run.status,
        inserted: run.counts.inserted,
        rejected: run.counts.rejected,
      },
      'sample import finished',
    );
  }
  return finished;
}

/**
 * Waits (bounded) until the Org changes of the sample imports have reached the search index, so
 * the search URL printed in the banner already finds them. A slow index only delays the banner.
 */
export async function waitForSearchIndex(db: Db, log: Logger, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await pendingIndexChanges(db)) === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  log.warn('the search index is still catching up with the sample data');
}

async function readSecret(file: string): Promise<string | undefined> {
  // No file (or none readable) means no secret kept yet: the caller makes one.
  const text = await fs.readFile(file, 'utf8').catch((): string => '');
  return text.trim() || undefined;
}

async function isLiveKey(db: Db, key: string): Promise<boolean> {
  const prefix = apiKeyPrefix(key);
  if (!prefix) return false;
  const principal = await findLiveKeyByPrefix(db, prefix);
  return principal !== undefined && hashesEqual(principal.hash, hashApiKey(key));
}

/**
 * The demo key printed at every start. Keys are stored only as hashes, so the key itself is kept
 * in the local data folder (mode 600) when first made; a key that no longer works (revoked, or a
 * different database) is replaced by a new demo account.
 */
export async function demoKey(db: Db, dataDir: string, log: Logger): Promise<string> {
  const file = path.join(dataDir, 'demo-api-key');
  const existing = await readSecret(file);
  if (existing && (await isLiveKey(db, existing))) return existing;
  const created = await createAccount(db, {
    name: 'Demo account',
    credits: 10_000,
    anchorDate: new Date().toISOString().slice(0, 10),
  });
  await fs.writeFile(file, `${created.api_key}\n`, { mode: 0o600 });
  log.info({ account: created.account_id }, 'demo account created');
  return created.api_key;
}

/**
 * `bizdir start` always has a dashboard: without ADMIN_TOKEN it makes a local one, kept in the data
 * folder so bookmarks and Prometheus configs keep working across restarts.
 */
export async function localAdminToken(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'admin-token');
  const existing = await readSecret(file);
  if (existing && existing.length >= 16) return existing;
  const token = randomBytes(24).toString('base64url');
  await fs.writeFile(file, `${token}\n`, { mode: 0o600 });
  return token;
}
