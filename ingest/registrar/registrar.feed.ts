import { ISO_CODES } from '../../shared/countries.js';
import type { ImportOptionsJson } from '../../shared/database.js';
import { type FeedHandler, ImportOptionsError, type PreparedFeed } from '../feed-handler.js';
import { closeMissingOrgs, mergeRegistrarChunk } from './registrar.loader.js';
import { normalizeRegistrarRow, type RegistrarRecord } from './registrar.normalize.js';
import { mapRegistrarHeader, readRegistrarRow } from './registrar.parser.js';
import { recognizeUnchanged, rowFingerprint } from './registrar.recognize.js';
import {
  createStage,
  deleteStagedPart,
  dropStage,
  indexStage,
  stagedRowsOf,
  stageRows,
} from './registrar.stage.js';

/** Company numbers merged per transaction. */
const MERGE_CHUNK = 5000;

/** The registrar feed: the company register bulk file (FEEDS.md section 1). */
export const registrarFeed: FeedHandler<RegistrarRecord> = {
  feed: 'registrar',

  parseOptions(raw) {
    if (raw.org !== undefined) throw new ImportOptionsError('--org applies to the locations feed only');
    const country = (raw.country ?? 'GB').trim().toUpperCase();
    if (!ISO_CODES.has(country))
      throw new ImportOptionsError(`--country must be an ISO 3166 code such as GB, not "${raw.country}"`);
    return { country, full: raw.full === true };
  },

  // One register at a time: two merges into the same register would race on the same companies
  // (parts only stage, so they need no lock).
  lockKey: (options) => `registrar:${options.country ?? 'GB'}`,

  // Orgs are found by company number (the lookup that went wrong with stale statistics); addresses and
  // labels are looked up by primary key (`= any(...)`), whatever the statistics.
  lookupColumns: { orgs: ['registration_country', 'registration_number'] },

  recognizesRows: true,

  prepare(header, options: ImportOptionsJson, headerRaw): PreparedFeed<RegistrarRecord> {
    const index = mapRegistrarHeader(header);
    const country = options.country ?? 'GB';
    const today = new Date();
    const fingerprintOf = rowFingerprint(country, headerRaw);
    return {
      normalize: (fields, _line, raw) => {
        const result = normalizeRegistrarRow(readRegistrarRow(fields, index), country, today);
        // A row with warnings is normalized (and its warnings reported) every time.
        if (result.ok) result.record.fingerprint = result.warnings.length === 0 ? fingerprintOf(raw) : null;
        return result;
      },
      recognize: (db, records) => recognizeUnchanged(db, country, index.number, fingerprintOf, records),
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
    dropPart: deleteStagedPart,
    prepareMerge: indexStage,
    mergeChunk: (trx, ctx, after) =>
      mergeRegistrarChunk(
        trx,
        { runId: ctx.runId, country: ctx.options.country ?? 'GB' },
        after,
        MERGE_CHUNK,
      ),
    async finish(trx, ctx, complete) {
      const country = ctx.options.country ?? 'GB';
      const outcome =
        complete && ctx.options.full === true
          ? await closeMissingOrgs(trx, { runId: ctx.runId, country })
          : { closed: 0, changedOrgIds: [] };
      await dropStage(trx, ctx.runId);
      return outcome;
    },
    discard: (db, runId) => dropStage(db, runId),
  },
};
