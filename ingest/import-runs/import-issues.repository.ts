import { type Selectable, sql, type Transaction } from 'kysely';
import type { Db } from '../../shared/db.js';
import type { Database, ImportRejectsTable } from '../../shared/tables.js';

/** Rejected rows and warnings of a run (table import_rejects), stored with line, raw text and reason. */
export type ImportIssue = Selectable<ImportRejectsTable>;

export interface NewIssue {
  severity: 'rejected' | 'warning';
  line: number;
  column: string | null;
  reason: string;
  raw: string | null;
  /**
   * Of a rejected row: the key of the record it names, when it can be read from the row
   * (PreparedFeed.keyOfRejected; the register: the company number). A `--full` register run counts
   * that record as present (registrar.close.ts closeMissingOrgs).
   */
  key?: string | null;
}

/** Longer raw text is cut: the row is kept for a person to read, not to be re-imported from here. */
const MAX_RAW = 8_000;

export async function insertIssues(
  trx: Transaction<Database>,
  runId: number,
  partNo: number,
  issues: readonly NewIssue[],
) {
  if (issues.length === 0) return;
  await sql`
    insert into import_rejects (run_id, part_no, severity, line_number, column_name, reason, raw, record_key)
    select ${runId}, ${partNo}::int, * from unnest(
      ${issues.map((i) => i.severity)}::text[], ${issues.map((i) => i.line)}::bigint[],
      ${issues.map((i) => i.column)}::text[], ${issues.map((i) => i.reason)}::text[],
      ${issues.map((i) => (i.raw === null ? null : i.raw.slice(0, MAX_RAW)))}::text[],
      ${issues.map((i) => i.key ?? null)}::text[])`.execute(trx);
}

export async function listIssues(db: Db, runId: number, limit: number): Promise<ImportIssue[]> {
  return db
    .selectFrom('import_rejects')
    .selectAll()
    .where('run_id', '=', runId)
    .orderBy('part_no')
    .orderBy('line_number')
    .orderBy('id')
    .limit(limit)
    .execute();
}
