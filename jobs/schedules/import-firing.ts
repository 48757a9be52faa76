import { lastSuccessfulFingerprint } from '../../ingest/import-runs/import-runs.repository.js';
import { createScheduledRun, type PartSource } from '../../ingest/import-runs/import-runs.state.js';
import { csvEntriesOf, SourceError } from '../../ingest/source.js';
import type { Db } from '../../shared/db.js';
import type { Logger } from '../../shared/logger.js';
import type { ScheduleRow } from './schedule.repository.js';
import { type Probe, probeSource, runFingerprint } from './source-fingerprint.js';
import { resolveSources, SourcesUnreachableError } from './source-resolution.js';
import { SourceTemplateError, SourceTemplates } from './source-template.js';

export interface ImportFiringDeps {
  db: Db;
  /** Enqueues the ordinary import job(s) of a run; returns the run's job id. Idempotent per run id. */
  enqueueImport(runId: number): Promise<string>;
  /** How a source is asked whether it exists (default probeSource). */
  probe?: Probe;
  /**
   * This firing's last attempt: a source that cannot be reached now fails the run instead of
   * failing the firing for BullMQ to try again.
   */
  finalAttempt?: boolean;
  log?: Logger;
}

export type ImportFiringOutcome =
  | { outcome: 'skipped'; runId: number }
  | { outcome: 'queued'; runId: number; jobId: string }
  | { outcome: 'failed'; runId: number; error: string }
  | { outcome: 'duplicate'; runId: number };

/** A passing failure: thrown for the firing's retry, or the run's failure on its last attempt. */
class TryAgain extends Error {}

/**
 * The parts of a run of several sources, as `bizdir import` makes them: a zip holding several CSVs
 * is one part per CSV. Made when the run is recorded, since the run's row keeps its sources only as
 * text for people.
 */
async function partsOf(locations: readonly string[]): Promise<PartSource[]> {
  const parts: PartSource[] = [];
  for (const source of locations) {
    let entries: string[];
    try {
      entries = await csvEntriesOf(source);
    } catch (error) {
      if (error instanceof SourceError && error.retryable) throw new TryAgain(error.message);
      throw error;
    }
    if (entries.length === 0) parts.push({ source, entry: null });
    else for (const entry of entries) parts.push({ source, entry });
  }
  return parts;
}

/**
 * One firing of an import schedule: resolve its sources (the newest period whose sources all
 * exist: source-resolution.ts), compare them with the last successful run, then record a skipped
 * run, a failed one (a source missing: nothing read, nothing marked gone), or an ordinary queued run
 * and enqueue its import. `slot` is the firing time BullMQ computed.
 */
export async function fireImport(
  deps: ImportFiringDeps,
  schedule: ScheduleRow,
  slot: Date,
): Promise<ImportFiringOutcome> {
  const base = {
    feed: schedule.feed!,
    options: schedule.options,
    scheduleName: schedule.name,
    slot,
    fingerprint: null,
  };
  const log = deps.log?.child({ schedule: schedule.name });
  const fail = async (source: string, error: string): Promise<ImportFiringOutcome> => {
    const run = await createScheduledRun(deps.db, { ...base, source, status: 'failed', error });
    if (!run.created) return { outcome: 'duplicate', runId: run.id };
    log?.warn({ runId: run.id, err: error }, 'scheduled import failed before reading anything');
    return { outcome: 'failed', runId: run.id, error };
  };
  const templatesText = schedule.sources.join(' ');
  try {
    // Checked by `schedule set`; a definition written by other means is the run's failure.
    const templates = new SourceTemplates(schedule.sources);
    const resolution = await resolveSources(templates, slot, schedule.tz, deps.probe ?? probeSource).catch(
      (error: unknown) => {
        if (error instanceof SourcesUnreachableError) throw new TryAgain(`cannot check ${error.message}`);
        throw error;
      },
    );
    if (resolution.kind === 'none') return await fail(templatesText, resolution.message);
    const locations = resolution.sources.map((s) => s.location);
    const source = locations.join(' ');
    if (resolution.kind === 'incomplete') return await fail(source, resolution.message);

    const fingerprints = await resolution.fingerprints();
    const fingerprint = runFingerprint(
      locations.map((location, i) => ({ location, fingerprint: fingerprints[i] })),
    );
    const unchanged =
      fingerprint !== null && fingerprint === (await lastSuccessfulFingerprint(deps.db, schedule.name));
    // One source: its parts are made when the run is first read (partsOf in ingest/import-runs/import-runs.state.ts).
    const parts = unchanged || locations.length === 1 ? undefined : await partsOf(locations);
    const run = await createScheduledRun(deps.db, {
      ...base,
      source,
      fingerprint,
      status: unchanged ? 'skipped' : 'queued',
      ...(parts ? { parts } : {}),
    });
    const runLog = log?.child({ runId: run.id, period: resolution.period });
    if (run.status === 'skipped') {
      runLog?.info('sources unchanged since the last successful run; run recorded as skipped');
      return run.created ? { outcome: 'skipped', runId: run.id } : { outcome: 'duplicate', runId: run.id };
    }
    // A retried firing finds its run already made; it (re-)enqueues only while the run still waits,
    // and the deterministic job id keeps that to one job.
    if (!run.created && run.status !== 'queued') return { outcome: 'duplicate', runId: run.id };
    const jobId = await deps.enqueueImport(run.id);
    runLog?.info({ jobId, sources: locations.length }, 'scheduled import queued');
    return run.created
      ? { outcome: 'queued', runId: run.id, jobId }
      : { outcome: 'duplicate', runId: run.id };
  } catch (error) {
    if (error instanceof SourceTemplateError) return fail(templatesText, error.message);
    if (error instanceof SourceError) return fail(templatesText, error.message);
    if (error instanceof TryAgain) {
      if (deps.finalAttempt) return fail(templatesText, error.message);
      log?.warn({ err: error.message }, 'sources could not be checked; the firing will be tried again');
    }
    throw error;
  }
}
