import { ISO_CODES } from '../shared/countries.js';
import type { ImportOptionsJson } from '../shared/database.js';
import { type FeedHandler, ImportOptionsError, type PreparedFeed } from './feed-handler.js';
import { closeMissingOrgs, loadRegistrarBatch } from './registrar.loader.js';
import { normalizeRegistrarRow, type RegistrarRecord } from './registrar.normalize.js';
import { mapRegistrarHeader, readRegistrarRow } from './registrar.parser.js';

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

  // One register at a time: two imports of the same register would race on the same companies.
  lockKey: (options) => `registrar:${options.country ?? 'GB'}`,

  // Orgs are found by company number (the lookup that went wrong with stale statistics); addresses and
  // labels are looked up by primary key (`= any(...)`), whatever the statistics.
  lookupColumns: { orgs: ['registration_country', 'registration_number'] },

  prepare(header, options: ImportOptionsJson): PreparedFeed<RegistrarRecord> {
    const index = mapRegistrarHeader(header);
    const country = options.country ?? 'GB';
    const today = new Date();
    return {
      normalize: (fields) => normalizeRegistrarRow(readRegistrarRow(fields, index), country, today),
      loadBatch: (trx, rows, ctx) => loadRegistrarBatch(trx, rows, { runId: ctx.runId, country }),
      finish: (trx, ctx) => closeMissingOrgs(trx, { runId: ctx.runId, country }, options.full === true),
    };
  },
};
