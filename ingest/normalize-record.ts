import type { CsvRecord } from './csv.js';
import type { NormalizedRow } from './feed-handler.js';
import type { NewIssue } from './import-runs/import-issues.repository.js';

/**
 * One split record through a feed's checks and normalizer: a malformed record or a wrong column
 * count is rejected, the normalizer's warnings and reject become issues, and the record (if kept)
 * is returned. Pure (no database), so the batch paths on the main thread (run/prepare-batch.ts) and on
 * the register's worker thread (registrar.prepare.ts) share it and report the same issues.
 */
export function normalizeRecord<R>(
  rec: CsvRecord,
  columns: number,
  normalize: (fields: readonly string[], raw: string) => NormalizedRow<R>,
  issues: NewIssue[],
): R | undefined {
  const reject = (column: string | null, reason: string) => {
    issues.push({ severity: 'rejected', line: rec.line, column, reason, raw: rec.raw });
  };
  if (rec.error) {
    reject(null, rec.error);
    return undefined;
  }
  if (rec.fields.length !== columns) {
    reject(null, `wrong column count: expected ${columns} fields, found ${rec.fields.length}`);
    return undefined;
  }
  const result = normalize(rec.fields, rec.raw);
  for (const w of result.warnings) {
    issues.push({ severity: 'warning', line: rec.line, column: w.column, reason: w.reason, raw: rec.raw });
  }
  if (result.ok) return result.record;
  reject(result.reject.column, result.reject.reason);
  return undefined;
}
