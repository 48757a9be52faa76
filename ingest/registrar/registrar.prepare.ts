import { slugify } from '../../shared/domains.js';
import { copyLine } from '../../shared/pg-copy.js';
import { type CsvRecord, splitFields } from '../csv.js';
import type { BatchRow, NormalizedRow } from '../feed-handler.js';
import type { NewIssue } from '../import-runs/import-issues.repository.js';
import { normalizeRecord } from '../normalize-record.js';
import { normalizeRegistrarRow, type RegistrarRecord } from './registrar.normalize.js';
import { mapRegistrarHeader, readRegistrarRow } from './registrar.parser.js';
import { rowFingerprint } from './registrar.recognize.js';

/**
 * What a part's reading needs to prepare its rows, as plain data (it crosses to a worker thread,
 * registrar.threads.ts): the file's header as split and as written, the register country, the day
 * dates are judged against, and the part the rows are staged for.
 */
export interface RegistrarBatchSetup {
  header: readonly string[];
  headerRaw: string;
  country: string;
  /** `today` of normalizeRegistrarRow, as epoch milliseconds. */
  today: number;
  partNo: number;
}

/** A row normalized and written out as its staging table line already (stageRows copies it as is). */
export interface StagedLine {
  stageLine: string;
}

export interface PreparedBatch {
  rows: BatchRow<StagedLine>[];
  issues: NewIssue[];
}

/** One register row normalized, with its fingerprint when it had no warnings. */
export type RegistrarNormalizer = (fields: readonly string[], raw: string) => NormalizedRow<RegistrarRecord>;

/** The normalizer of a file (its header) for a register: what `normalize` of the feed runs per row. */
export function registrarNormalizer(
  setup: Pick<RegistrarBatchSetup, 'header' | 'headerRaw' | 'country' | 'today'>,
  fingerprintOf: (raw: string) => string = rowFingerprint(setup.country, setup.headerRaw),
): RegistrarNormalizer {
  const index = mapRegistrarHeader(setup.header);
  const today = new Date(setup.today);
  return (fields, raw) => {
    const result = normalizeRegistrarRow(readRegistrarRow(fields, index), setup.country, today);
    // A row with warnings is normalized (and its warnings reported) every time.
    if (result.ok) result.record.fingerprint = result.warnings.length === 0 ? fingerprintOf(raw) : null;
    return result;
  };
}

/** A normalized row as its line of the run's staging table (registrar.stage.ts COLUMNS, in order). */
export function stageLineOf(partNo: number, line: number, r: RegistrarRecord): string {
  return copyLine([
    partNo,
    line,
    r.number,
    r.name,
    r.informal_name,
    r.sic_code,
    r.registration_date,
    r.company_status,
    r.company_category,
    r.address.line1,
    r.address.line2,
    r.address.line3,
    r.address.city,
    r.address.state,
    r.address.zip,
    r.address.country_code,
    r.addressHash,
    r.orgHash,
    slugify(r.name),
    r.fingerprint ?? null,
    null,
  ]);
}

/**
 * Splits, checks, normalizes, fingerprints and writes out a batch of records (none recognised
 * unchanged): the same rows and issues as ingest/run/prepare-batch.ts normalizeBatch with the feed's `normalize`,
 * with each row's staging line built here. Pure, so it runs on a worker thread beside the part's
 * reading (registrar.threads.ts).
 */
export function prepareRegistrarBatch(
  setup: RegistrarBatchSetup,
  records: readonly CsvRecord[],
  normalize: RegistrarNormalizer = registrarNormalizer(setup),
): PreparedBatch {
  const rows: BatchRow<StagedLine>[] = [];
  const issues: NewIssue[] = [];
  const columns = setup.header.length;
  for (const rec of splitFields(records)) {
    const record = normalizeRecord(rec, columns, normalize, issues);
    // The raw text stays here: only issues carry it back (a row's raw text is not staged).
    if (record !== undefined)
      rows.push({
        line: rec.line,
        raw: '',
        record: { stageLine: stageLineOf(setup.partNo, rec.line, record) },
      });
  }
  return { rows, issues };
}
