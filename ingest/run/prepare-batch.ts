import type { Db } from '../../shared/db.js';
import { FeedFormatError } from '../../shared/errors.js';
import { type CsvReader, type CsvRecord, splitFields, UNTERMINATED_AT_END } from '../csv.js';
import type { BatchContext, BatchRow, PreparedFeed } from '../feed-handler.js';
import type { NewIssue } from '../import-runs/import-issues.repository.js';
import { normalizeRecord } from '../normalize-record.js';

/** A batch of a part ready to load: its records, the rows they normalized to, their issues. */
export interface PreparedBatch {
  /** The part's rows read up to the end of this batch. */
  checkpoint: number;
  records: readonly CsvRecord[];
  rows: BatchRow<unknown>[];
  issues: NewIssue[];
}

/**
 * Reads a part's batches one after the other and prepares each (JavaScript work: recognize,
 * split, normalize), skipping the records before the part's checkpoint (a batch wholly before it
 * comes back empty). `seen` counts the records read so far.
 */
export class BatchPreparer {
  #seen = 0;

  constructor(
    private readonly db: Db,
    private readonly csv: CsvReader,
    private readonly prepared: PreparedFeed<unknown>,
    private readonly ctx: BatchContext,
    private readonly skip: number,
  ) {}

  get seen(): number {
    return this.#seen;
  }

  /** The next batch, or null at the end of the file. */
  async next(): Promise<PreparedBatch | null> {
    const { prepared, ctx, skip } = this;
    const step = await this.csv.batches.next();
    if (step.done) return null;
    const last = step.value.at(-1);
    if (ctx.options.full && last?.error === UNTERMINATED_AT_END)
      // The file ends inside a record: cut short (or a stray quote swallowed its end), so it is not
      // the whole list `--full` needs. The part fails for good; the run marks nothing as gone.
      throw new FeedFormatError(
        `line ${last.line}: the file ends inside a quoted field (cut short, or a stray quote): ` +
          'a --full import needs the whole file, nothing was marked as gone',
      );
    const start = this.#seen;
    this.#seen += step.value.length;
    // This batch's own end: `seen` moves on while it is prepared (other batches are read meanwhile).
    const checkpoint = this.#seen;
    if (checkpoint <= skip) return { checkpoint, records: [], rows: [], issues: [] };
    const records = start < skip ? step.value.slice(skip - start) : step.value;
    // Rows the feed knows unchanged by their raw text skip splitting and normalizing altogether.
    const known = prepared.recognize
      ? await prepared.recognize(this.db, records, ctx)
      : new Map<number, unknown>();
    const rest = known.size === 0 ? records : records.filter((_, i) => !known.has(i));
    const normalized = prepared.normalizeBatch
      ? await prepared.normalizeBatch(rest, ctx)
      : await normalizeBatch(prepared, splitFields(rest), this.csv.header.length);
    const knownRows = [...known].map(([i, record]) => ({
      line: records[i]!.line,
      raw: records[i]!.raw,
      record,
    }));
    // A rejected row keeps the key it names, when readable (only rejects: a few per batch at most).
    if (prepared.keyOfRejected)
      for (const issue of normalized.issues)
        if (issue.severity === 'rejected' && issue.raw !== null && issue.key === undefined)
          issue.key = prepared.keyOfRejected(issue.raw);
    return {
      checkpoint,
      records,
      rows: [...knownRows, ...normalized.rows],
      issues: normalized.issues,
    };
  }
}

/** Rows normalized between two yields to the event loop (a few milliseconds of work). */
const NORMALIZE_SLICE = 250;
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The feed's `normalize`, row by row, yielding to the event loop every NORMALIZE_SLICE rows, so the
 * statements of the batch being written are sent as soon as the previous one answers.
 */
async function normalizeBatch<R>(prepared: PreparedFeed<R>, records: readonly CsvRecord[], columns: number) {
  const rows: BatchRow<R>[] = [];
  const issues: NewIssue[] = [];
  for (let i = 0; i < records.length; i++) {
    if (i > 0 && i % NORMALIZE_SLICE === 0) await yieldToEventLoop();
    const rec = records[i]!;
    const record = normalizeRecord(
      rec,
      columns,
      (fields, raw) => prepared.normalize(fields, rec.line, raw),
      issues,
    );
    if (record !== undefined) rows.push({ line: rec.line, raw: rec.raw, record });
  }
  return { rows, issues };
}
