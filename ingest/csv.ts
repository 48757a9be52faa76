import type { Readable } from 'node:stream';
import { FeedFormatError } from '../shared/errors.js';
import { deferRecords, parseOne, parseRecords } from './csv-fields.js';
import { BARE_CR, CR_ONLY, HAS_NUL, NOT_UTF8, type RawRecord, rawRecords } from './csv-records.js';

export { PARSE_CONFIG, simpleFields, splitFields } from './csv-fields.js';
export { CR_ONLY, NOT_UTF8, UNTERMINATED_AT_END } from './csv-records.js';

/**
 * Generic streaming CSV reading for every feed (RFC 4180: `"` quoting, doubled quotes, quoted line
 * breaks, LF or CRLF). Records come in batches, each with its 1-based physical line number and raw
 * text, so a bad row can be stored as the user wrote it.
 *
 * Why not papaparse's own stream mode: its step callback exposes neither the raw text nor the line
 * of a row. So the text is cut into records here (csv-records.ts: a quote-parity scan, which is all
 * RFC 4180 needs to find record ends) and each batch of records is split into fields (csv-fields.ts:
 * most directly, the rest by papaparse).
 * Back-pressure is natural: the source is only read when the consumer asks for the next batch.
 *
 * Text must be UTF-8 (a BOM is skipped): a record holding bytes that are not is marked (NOT_UTF8),
 * never decoded into something else. Lines end in LF or CRLF; a file whose lines end in CR alone
 * fails (CR_ONLY).
 */
export interface CsvRecord {
  /** Physical line (1-based) where the record starts; the header is usually line 1. */
  line: number;
  /** The record's text without its line terminator. */
  raw: string;
  /** Field values, always strings (never typed). */
  fields: string[];
  /** Set when the record is malformed (bad quoting); `fields` is then unreliable. */
  error?: string;
  /** Set when the reader was asked to leave fields unsplit (`deferFields`): see splitFields. */
  deferred?: true;
}

/** Records per batch when the caller does not say (an import passes its own, ingest/run/deps.ts IMPORT_BATCH_SIZE). */
const DEFAULT_BATCH_SIZE = 2000;

export interface CsvReaderOptions {
  /** Records per batch (default DEFAULT_BATCH_SIZE, above). */
  batchSize?: number;
  /** A record longer than this is malformed (a stray quote would otherwise swallow the file). */
  maxRecordChars?: number;
  /**
   * Leave the fields of data records unsplit (`fields` empty, `deferred` set): a feed that recognises
   * unchanged rows by their raw text splits only the others (splitFields), which saves papaparse's
   * work on most rows of a re-import.
   */
  deferFields?: boolean;
}

export interface CsvReader {
  /** Header names, trimmed. */
  header: string[];
  headerLine: number;
  /** The header line as written (a feed may fingerprint rows together with it). */
  headerRaw: string;
  /** Data records in batches; each batch is read only when asked for. */
  batches: AsyncGenerator<CsvRecord[], void, undefined>;
}

/** Groups records into batches of `size` and splits their fields (unless deferred), one batch at a time. */
async function* batchesOf(
  first: readonly RawRecord[],
  rest: AsyncGenerator<RawRecord[]>,
  size: number,
  defer: boolean,
): AsyncGenerator<CsvRecord[]> {
  const cut = defer ? deferRecords : parseRecords;
  let pending: RawRecord[] = [];
  const add = function* (records: readonly RawRecord[]): Generator<CsvRecord[]> {
    for (const rec of records) {
      pending.push(rec);
      if (pending.length >= size) {
        yield cut(pending);
        pending = [];
      }
    }
  };
  yield* add(first);
  for await (const records of rest) yield* add(records);
  if (pending.length > 0) yield cut(pending);
}

/**
 * Reads the header and returns the batches of data records. Throws FeedFormatError when the input
 * is empty or not CSV text.
 */
export async function openCsv(stream: Readable, options: CsvReaderOptions = {}): Promise<CsvReader> {
  const maxChars = options.maxRecordChars ?? 1024 * 1024;
  const it = rawRecords(stream, maxChars);
  let first: RawRecord[] = [];
  while (first.length === 0) {
    const step = await it.next();
    if (step.done) throw new FeedFormatError('the file is empty');
    first = step.value;
  }
  const head = first[0]!;
  const refuse = async (reason: string): Promise<never> => {
    await it.return(undefined);
    throw new FeedFormatError(reason);
  };
  // Binary data (a zip or image given as CSV) shows NULs (an error record, see take) or undecodable
  // bytes in its first "line"; a text file whose lines end in CR alone is one long first line. A
  // header of text with a few undecodable bytes is text in another encoding.
  if (head.error === HAS_NUL) await refuse('the file is not CSV text');
  if (BARE_CR.test(head.raw)) await refuse(CR_ONLY);
  if (head.error === NOT_UTF8) {
    const undecodable = head.raw.match(/\uFFFD/g)?.length ?? 0;
    await refuse(undecodable > 2 ? 'the file is not CSV text' : `the header line is ${NOT_UTF8}`);
  }
  if (head.error) await refuse('the file is not CSV text');
  const parsed = parseOne(head);
  if (parsed.error) {
    await it.return(undefined);
    throw new FeedFormatError(`the header line is not valid CSV (${parsed.error})`);
  }
  return {
    header: parsed.fields.map((h) => h.trim()),
    headerLine: head.line,
    headerRaw: head.raw,
    batches: batchesOf(
      first.slice(1),
      it,
      options.batchSize ?? DEFAULT_BATCH_SIZE,
      options.deferFields === true,
    ),
  };
}
