import { ISO_CODES } from '../../shared/countries.js';
import type { ImportOptionsJson } from '../../shared/tables.js';
import { type FeedHandler, ImportOptionsError, type PreparedFeed } from '../feed-handler.js';
import { maxGoneOption } from '../full-guard.js';
import { checkOrgNaming, matchLocationHeaders } from './locations.headers.js';
import { type LocationRecord, LocationsLoader } from './locations.loader.js';

/** The location feed: business-profile bulk-upload sheets (docs/feeds.md section 2). */
export const locationsFeed: FeedHandler<LocationRecord> = {
  feed: 'locations',

  parseOptions(raw) {
    const options: ImportOptionsJson = { full: raw.full === true, ...maxGoneOption(raw) };
    const org = raw.org?.trim();
    if (raw.org !== undefined) {
      if (!org) throw new ImportOptionsError('--org needs an Org domain or a company number');
      options.org = org;
    }
    // `--country` names the register that `Company number` cells (and a number given to --org) refer to.
    if (raw.country !== undefined) {
      const country = raw.country.trim().toUpperCase();
      if (!ISO_CODES.has(country)) {
        throw new ImportOptionsError(`--country must be an ISO 3166 code such as GB, not "${raw.country}"`);
      }
      options.country = country;
    }
    return options;
  },

  // Location imports run one at a time: two sheets of one business would race on its store codes,
  // and each settles the Org's default Location at its end.
  lockKey: () => 'locations',

  // Locations are found by joining the batch's (Org, store code) keys: that join's plan needs fresh
  // statistics. Addresses and labels are looked up by primary key (`= any(...)`), whatever the stats.
  lookupColumns: { locations: ['org_id', 'code'] },

  prepare(header, options, _headerRaw, config): PreparedFeed<LocationRecord> {
    const columns = matchLocationHeaders(header);
    checkOrgNaming(columns, options.org !== undefined);
    const loader = new LocationsLoader(columns, {
      full: options.full === true,
      maxGonePercent: options.max_gone,
      org: options.org,
      domainSuffix: config.domainSuffix,
      registrationCountry: options.country ?? 'GB',
      header,
    });
    return {
      normalize: (fields, _line, raw) => loader.prepareRow(fields, raw),
      loadBatch: (trx, rows, ctx) => loader.loadBatch(trx, rows, ctx),
      // Two batches' transactions at once, so Postgres works on both cores (LocationsLoader.loadBatch),
      // with IMPORT_PIPELINE=on.
      batchesInFlight: config.importPipeline ? 2 : 1,
      finish: (trx, ctx) => loader.finish(trx, ctx.runId),
    };
  },
};
