import { ISO_CODES } from '../../shared/countries.js';
import type { ImportOptionsJson } from '../../shared/tables.js';
import type { CsvRecord } from '../csv.js';
import {
  type BatchContext,
  type FeedHandler,
  ImportOptionsError,
  type PreparedFeed,
} from '../feed-handler.js';
import { maxGoneOption } from '../full-guard.js';
import { closeMissingOrgs } from './registrar.close.js';
import { labelRun } from './registrar.labels.js';
import { mergeRegistrarChunk, planRegistrarChunk, type RegistrarChunkPlan } from './registrar.merge.js';
import { type RegistrarRecord, readableCompanyNumber } from './registrar.normalize.js';
import { mapRegistrarHeader } from './registrar.parser.js';
import { registrarNormalizer, type StagedLine } from './registrar.prepare.js';
import { recognizeUnchanged, rowFingerprint } from './registrar.recognize.js';
import {
  createStage,
  deleteStagedPart,
  dropStage,
  indexStage,
  stageChunkBounds,
  stagedRowsByPart,
  stagedRowsOf,
  stageRows,
} from './registrar.stage.js';
import { PREPARING_THREADS, prepareOffThread, startPreparing } from './registrar.threads.js';

/** Company numbers merged per transaction. */
const MERGE_CHUNK = 5000;

/** The registrar feed: the company register bulk file (docs/feeds.md section 1). */
export const registrarFeed: FeedHandler<RegistrarRecord | StagedLine> = {
  feed: 'registrar',

  parseOptions(raw) {
    if (raw.org !== undefined) throw new ImportOptionsError('--org applies to the locations feed only');
    const country = (raw.country ?? 'GB').trim().toUpperCase();
    if (!ISO_CODES.has(country))
      throw new ImportOptionsError(`--country must be an ISO 3166 code such as GB, not "${raw.country}"`);
    return { country, full: raw.full === true, ...maxGoneOption(raw) };
  },

  // One register at a time: two merges into the same register would race on the same companies
  // (parts only stage, so they need no lock).
  lockKey: (options) => `registrar:${options.country ?? 'GB'}`,

  // Orgs are found by company number (the lookup that went wrong with stale statistics). Changed
  // addresses are updated by id from a list (UPDATE ... FROM unnest): with the statistics of a smaller
  // table that was planned as a hash join over every address (180 ms per 1,000 changed companies at
  // 200,000 addresses, against 15 ms), so the addresses' ids are kept analysed too.
  lookupColumns: { orgs: ['registration_country', 'registration_number'], addresses: ['id'] },

  recognizesRows: true,

  prepare(header, options: ImportOptionsJson, headerRaw, config): PreparedFeed<RegistrarRecord | StagedLine> {
    const index = mapRegistrarHeader(header);
    const country = options.country ?? 'GB';
    const setup = { header: [...header], headerRaw, country, today: Date.now() };
    const fingerprintOf = rowFingerprint(country, headerRaw);
    const normalizeRow = registrarNormalizer(setup, fingerprintOf);
    // IMPORT_PIPELINE=on: batches are split, normalized, hashed and written out on the worker thread
    // while the main thread stages the batch before (registrar.threads.ts), two batches ahead.
    const onThread = config.importPipeline === true;
    if (onThread) startPreparing();
    return {
      normalize: (fields, _line, raw) => normalizeRow(fields, raw),
      // A rejected row still names its company when its number can be read: `--full` keeps it.
      keyOfRejected: (raw) => readableCompanyNumber(raw, index.number),
      recognize: (db, records, ctx) =>
        recognizeUnchanged(db, { country, runId: ctx.runId }, index.number, fingerprintOf, records),
      ...(onThread
        ? {
            normalizeBatch: (records: readonly CsvRecord[], ctx: BatchContext) =>
              prepareOffThread({ ...setup, partNo: ctx.partNo }, records),
            readAhead: PREPARING_THREADS + 1,
          }
        : {}),
      loadBatch: async (trx, rows, ctx) => {
        await stageRows(trx, ctx.runId, ctx.partNo, rows);
        return { inserted: 0, updated: 0, unchanged: 0, duplicates: 0, changedOrgIds: [] };
      },
    };
  },

  // The register ships in parts (and a company may appear twice): parts stage, the run merges.
  staged: {
    open: createStage,
    stagedRows: stagedRowsOf,
    stagedRowsByPart,
    dropPart: deleteStagedPart,
    // The stage's index, then every label the run hands out, in the order of the rows (registrar.labels.ts).
    async prepareMerge(db, ctx) {
      await indexStage(db, ctx.runId);
      await labelRun(db, ctx.runId, ctx.options.country ?? 'GB');
    },
    chunkBounds: (db, ctx, after, limit) => stageChunkBounds(db, ctx.runId, after, limit ?? MERGE_CHUNK),
    planChunk: (db, ctx, after, upto) =>
      planRegistrarChunk(db, { runId: ctx.runId, country: ctx.options.country ?? 'GB' }, after, upto),
    mergeChunk: (db, trx, ctx, plan) =>
      mergeRegistrarChunk(
        trx,
        { db, runId: ctx.runId, country: ctx.options.country ?? 'GB' },
        plan as RegistrarChunkPlan,
      ),
    async finish(trx, ctx, complete) {
      const country = ctx.options.country ?? 'GB';
      const outcome =
        complete && ctx.options.full === true
          ? await closeMissingOrgs(trx, { runId: ctx.runId, country }, ctx.options.max_gone)
          : { closed: 0, changedOrgIds: [] };
      await dropStage(trx, ctx.runId);
      return outcome;
    },
    discard: (db, runId) => dropStage(db, runId),
  },
};
