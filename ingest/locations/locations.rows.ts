import type { NormalizedRow } from '../feed-handler.js';
import { type LocationColumns, type LocationField, newLocationGap } from './locations.headers.js';
import { locationKeyReader, rowFingerprinter } from './locations.key.js';
import type { BatchIssues, LocationRecord, Pending, RowRef } from './locations.match.js';
import { locationRowNormalizer } from './locations.normalize.js';
import { mergeAhead as mergeAheadOf } from './locations.write.js';

type Normalized = Extract<LocationRecord, { kind: 'row' | 'refused' }>;
type Keyed = Extract<LocationRecord, { kind: 'keyed' }>;

/**
 * A sheet's rows as the loader sees them: what its header can say of a row, ahead of the batch (the
 * read-ahead's pure part) and in it (a keyed row its fingerprint does not settle is normalized then).
 */
export class LocationRows {
  /**
   * Null when the sheet has every column a new Location needs; else the reason its rows that name no
   * stored Location are refused (a partial sheet updates stored Locations only, see newLocationGap).
   */
  readonly newGap: string | null;
  /**
   * Whether the read-ahead normalizes (and merges) every row, or reads only its key. The loader sets
   * it from the last batch: while most rows are written (a first import) the work is done ahead, in
   * parallel with Postgres; once most rows turn out unchanged (a re-import), it is not done at all
   * for them.
   */
  eager = true;
  private readonly fingerprintOf: (raw: string) => string;
  private readonly normalizeRow: ReturnType<typeof locationRowNormalizer>;
  private readonly readKey: ReturnType<typeof locationKeyReader>;

  constructor(
    private readonly columns: LocationColumns,
    header: readonly string[],
  ) {
    this.fingerprintOf = rowFingerprinter(header);
    this.normalizeRow = locationRowNormalizer(columns);
    this.readKey = locationKeyReader(columns);
    this.newGap = newLocationGap(columns);
  }

  /** The read-ahead's part (pure, no database): see LocationRecord. */
  prepare(fields: readonly string[], raw: string): NormalizedRow<LocationRecord> {
    const fingerprint = this.fingerprintOf(raw);
    if (!this.eager) {
      const key = this.readKey(fields);
      if (key) return { ok: true, record: { kind: 'keyed', fields, fingerprint, ...key }, warnings: [] };
    }
    return this.normalize(fields, fingerprint, this.eager);
  }

  /** The sheet's own name of a column, for issues. */
  label(field: LocationField): string {
    return this.columns.name[field] ?? field;
  }

  /** A keyed row that its fingerprint cannot settle is normalized in the batch; it may turn out refused. */
  normalizeKeyed(r: RowRef, record: Keyed, issues: BatchIssues): Normalized | null {
    const result = this.normalize(record.fields, record.fingerprint, false);
    if (!result.ok) {
      issues.refuse(r, result.reject);
      return null;
    }
    issues.warn(r, result.warnings);
    return result.record as Normalized;
  }

  /**
   * Keyed rows that their fingerprint does not settle are normalized now; those refused on the way
   * are left out (their keys recorded, so `--full` does not close their Locations).
   */
  normalizeUnsettled(
    candidates: readonly Pending[],
    settled: (p: Pending) => boolean,
    issues: BatchIssues,
    refusedKeys: string[],
  ): Pending[] {
    const out: Pending[] = [];
    for (const p of candidates) {
      if (p.record.kind === 'keyed' && !settled(p)) {
        const normalized = this.normalizeKeyed(p, p.record, issues);
        if (normalized === null) continue;
        if (normalized.kind === 'refused') {
          issues.refuse(p, normalized.issue);
          refusedKeys.push(p.key);
          continue;
        }
        p.record = normalized;
      }
      out.push(p);
    }
    return out;
  }

  private normalize(
    fields: readonly string[],
    fingerprint: string,
    mergeAhead: boolean,
  ): NormalizedRow<LocationRecord> {
    const result = this.normalizeRow(fields);
    if (result.ok) {
      const { row, warnings } = result;
      const clean = warnings.length === 0;
      const kept = clean ? fingerprint : null;
      // Merging ahead is the merge of a new Location: none for a sheet that creates none.
      const merged = mergeAhead && this.newGap === null ? mergeAheadOf(row, kept) : null;
      return {
        ok: true,
        record: { kind: 'row', row, fingerprint: kept, merged },
        warnings,
      };
    }
    if (result.key) {
      const { code, org } = result.key;
      return { ok: true, record: { kind: 'refused', issue: result.issue, code, org }, warnings: [] };
    }
    return { ok: false, reject: result.issue, warnings: [] };
  }
}
