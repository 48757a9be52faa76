import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import Papa from 'papaparse';
import { FeedFormatError } from '../shared/errors.js';

/**
 * Generic streaming CSV reading for every feed (RFC 4180: `"` quoting, doubled quotes, quoted line
 * breaks, LF or CRLF). Records come in batches, each with its 1-based physical line number and raw
 * text, so a bad row can be stored as the user wrote it.
 *
 * Why not papaparse's own stream mode: its step callback exposes neither the raw text nor the line
 * of a row. So this module cuts the text into records itself (a quote-parity scan, which is all
 * RFC 4180 needs to find record ends) and hands each batch of records to papaparse to split fields.
 * Back-pressure is natural: the source is only read when the consumer asks for the next batch.
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

/** Records per batch when the caller does not say (an import passes its own, run-import.ts IMPORT_BATCH_SIZE). */
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

interface RawRecord {
  line: number;
  raw: string;
  error?: string;
}

const CR = 13;
const NUL = '\u0000';
/**
 * One whole record and its line break, from where it starts: runs outside quotes and quoted
 * stretches (a doubled quote is two stretches side by side; a quoted stretch may hold line breaks).
 * Sticky: it matches at `lastIndex` or not at all. Matching a record in one native call was 2-3
 * times faster than jumping from quote to quote with indexOf (the register quotes all 55 fields).
 */
const RECORD = /[^"\n]*(?:"[^"]*"[^"\n]*)*\n/y;
const NUL_SHOWN = '\u2400';
/**
 * The error of a last record whose quoted field never closes: the file ends inside a record, most
 * likely cut short (an interrupted download or copy), so records after it may be missing too.
 */
export const UNTERMINATED_AT_END = 'unterminated quoted field at end of file';

/**
 * Cuts decoded text into records; blank lines are skipped (but counted). Yields the records each
 * chunk of input completes, as one array (possibly empty): one await per chunk rather than one per
 * record, which was a visible share of reading a large sheet.
 */
async function* rawRecords(stream: Readable, maxChars: number): AsyncGenerator<RawRecord[]> {
  const decoder = new StringDecoder('utf8');
  let buf = '';
  let start = 0; // start of the current record in buf
  let pos = 0; // scan position
  let inQuotes = false;
  let line = 1; // physical line of buf[start]
  let linesInRecord = 0; // line breaks between start and pos
  let first = true;
  let out: RawRecord[] = [];
  // Set once any chunk held a NUL: only then is each record searched for one.
  let sawNul = false;

  const take = (end: number, error?: string): void => {
    let raw = buf.slice(start, end);
    if (raw.charCodeAt(raw.length - 1) === CR) raw = raw.slice(0, -1);
    if (sawNul && raw.includes(NUL)) {
      // Postgres text cannot hold a NUL: the record is rejected here (its raw text kept, the NUL shown
      // as ␀) instead of failing the batch it would reach the database in.
      raw = raw.replaceAll(NUL, NUL_SHOWN);
      error ??= 'contains a NUL (0x00) character, shown as ␀';
    }
    if (raw.length > 0) out.push(error ? { line, raw, error } : { line, raw });
    line += linesInRecord + 1;
    linesInRecord = 0;
    start = end + 1;
  };

  // Whole records first (RECORD), as long as they are complete and of a sane length: the common case.
  // What is left (a partial record at the end of the text, or an overlong one) goes to `scan`.
  const wholeRecords = (): void => {
    // A partial record left by the last chunk is read again from its start (the same result as
    // going on from where `scan` stopped in it: the scan only depends on the text from `start`).
    pos = start;
    inQuotes = false;
    linesInRecord = 0;
    RECORD.lastIndex = start;
    while (RECORD.test(buf)) {
      const nl = RECORD.lastIndex - 1;
      if (nl - start > maxChars) break;
      // A record with quoted line breaks counts them (its first line break is not its end).
      const first = buf.indexOf('\n', start);
      if (first < nl) for (let i = first; i < nl; i = buf.indexOf('\n', i + 1)) linesInRecord++;
      take(nl);
      RECORD.lastIndex = start;
    }
    pos = start;
  };

  // Jumps from quote to quote and line break to line break with indexOf (native, fast) instead of
  // looking at every character; the next line break is remembered until the scan passes it. Returns
  // the error that ends the file, after the records before it have been taken.
  const scan = (): FeedFormatError | undefined => {
    wholeRecords();
    const len = buf.length;
    let nl = buf.indexOf('\n', pos);
    while (pos < len) {
      if (nl >= 0 && nl < pos) nl = buf.indexOf('\n', pos);
      const q = buf.indexOf('"', pos);
      if (inQuotes) {
        if (nl >= 0 && (q < 0 || nl < q)) {
          // A line break inside a quoted field belongs to the record.
          linesInRecord++;
          pos = nl + 1;
        } else if (q >= 0) {
          inQuotes = false;
          pos = q + 1;
        } else pos = len;
        if (pos - start > maxChars) {
          // Unbalanced quote: give up on this record's first physical line and resynchronise after it.
          const first = buf.indexOf('\n', start);
          const end = first < 0 ? len : first;
          linesInRecord = 0;
          take(end, 'unbalanced quotes (record too long)');
          pos = start;
          inQuotes = false;
          nl = buf.indexOf('\n', pos);
        }
      } else if (nl >= 0 && (q < 0 || nl < q)) {
        take(nl);
        pos = start;
      } else if (q >= 0) {
        inQuotes = true;
        pos = q + 1;
      } else {
        // No record end in sight: a text file has lines far shorter than this; binary data may not.
        if (len - start > maxChars) return new FeedFormatError(`line ${line} is too long: not a CSV file`);
        pos = len;
      }
    }
    return undefined;
  };

  /** The records found since the last call. */
  const found = (): RawRecord[] => {
    const records = out;
    out = [];
    return records;
  };

  for await (const chunk of stream) {
    let text = decoder.write(chunk as Buffer);
    if (first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    if (!sawNul && text.includes(NUL)) sawNul = true;
    // Drop what was consumed so the buffer holds at most one partial record plus one chunk.
    buf = buf.slice(start) + text;
    pos -= start;
    start = 0;
    const error = scan();
    yield found();
    if (error) throw error;
  }
  const tail = decoder.end();
  if (tail.includes(NUL)) sawNul = true;
  buf = buf.slice(start) + tail;
  pos -= start;
  start = 0;
  const error = scan();
  if (error) {
    yield found();
    throw error;
  }
  if (start < buf.length) take(buf.length, inQuotes ? UNTERMINATED_AT_END : undefined);
  yield found();
}

/** How papaparse reads one register record (also the oracle of test/csv.test.ts's splitter check). */
export const PARSE_CONFIG = {
  delimiter: ',',
  newline: '\n',
  quoteChar: '"',
  escapeChar: '"',
  header: false,
  dynamicTyping: false,
  skipEmptyLines: false,
} as const;

function parseOne(rec: RawRecord): CsvRecord {
  if (rec.error) return { line: rec.line, raw: rec.raw, error: rec.error, fields: [] };
  const result = Papa.parse<string[]>(rec.raw, PARSE_CONFIG);
  if (result.data.length !== 1)
    return { line: rec.line, raw: rec.raw, fields: [], error: 'malformed quoting' };
  const error = result.errors[0];
  const parsed: CsvRecord = { line: rec.line, raw: rec.raw, fields: result.data[0]! };
  if (error) parsed.error = `malformed quoting (${error.message})`;
  return parsed;
}

/**
 * The fields of a record papaparse would split without a question, or null: every field either
 * unquoted with no quote or line break in it, or quoted whole (commas and line breaks inside) with no quote inside
 * and nothing but a comma or the end after it. Anything else (a doubled quote, text after a closing
 * quote, a quote in an unquoted field, an empty record) is left to papaparse. Linear: each character
 * is looked at a bounded number of times. The register quotes all 55 fields and rarely doubles a
 * quote, so most of its rows take this path (papaparse was an eighth of a first import's reading).
 */
export function simpleFields(raw: string): string[] | null {
  const n = raw.length;
  if (n === 0) return null;
  const out: string[] = [];
  let i = 0;
  // The next quote at or after i (n: none), found again only once i has passed it.
  let quote = raw.indexOf('"');
  if (quote < 0) quote = n;
  // Likewise the next line break: one outside quotes ends papaparse's row (the cutter never leaves one).
  let lf = raw.indexOf('\n');
  if (lf < 0) lf = n;
  for (;;) {
    if (lf < i) {
      lf = raw.indexOf('\n', i);
      if (lf < 0) lf = n;
    }
    if (quote === i) {
      const close = raw.indexOf('"', i + 1);
      if (close < 0) return null;
      const after = close + 1;
      if (after < n && raw.charCodeAt(after) !== 44) return null;
      out.push(raw.slice(i + 1, close));
      if (after === n) return out;
      i = after + 1;
      quote = raw.indexOf('"', i);
      if (quote < 0) quote = n;
    } else {
      const comma = raw.indexOf(',', i);
      const end = comma < 0 ? n : comma;
      if (quote < end || lf < end) return null;
      out.push(raw.slice(i, end));
      if (comma < 0) return out;
      i = comma + 1;
    }
    if (i === n) {
      out.push('');
      return out;
    }
  }
}

/**
 * Splits the fields of a batch: simple records (simpleFields) directly, the others in one papaparse
 * call (or one per record if unsure).
 */
export function parseRecords(records: RawRecord[]): CsvRecord[] {
  const parsed: CsvRecord[] = new Array(records.length);
  const rest: number[] = [];
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    const fields = r.error === undefined ? simpleFields(r.raw) : null;
    if (fields === null) rest.push(i);
    else parsed[i] = { line: r.line, raw: r.raw, fields };
  }
  if (rest.length > 0) {
    const others = parseWithPapa(rest.map((i) => records[i]!));
    for (let k = 0; k < rest.length; k++) parsed[rest[k]!] = others[k]!;
  }
  return parsed;
}

/** Splits the fields of a batch in one papaparse call; falls back to one call per record if unsure. */
function parseWithPapa(records: RawRecord[]): CsvRecord[] {
  if (records.some((r) => r.error)) return records.map(parseOne);
  const result = Papa.parse<string[]>(records.map((r) => r.raw).join('\n'), PARSE_CONFIG);
  if (result.data.length !== records.length) return records.map(parseOne);
  const errors = new Map<number, string>();
  for (const e of result.errors)
    if (e.row !== undefined) errors.set(e.row, `malformed quoting (${e.message})`);
  const parsed: CsvRecord[] = new Array(records.length);
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    parsed[i] = { line: r.line, raw: r.raw, fields: result.data[i]! };
    const error = errors.get(i);
    if (error) parsed[i]!.error = error;
  }
  return parsed;
}

/**
 * Records whose fields are split later (splitFields), or not at all. Plain object literals: a spread
 * (`{ ...r, ... }`) cost about 1 µs a record.
 */
const deferRecords = (records: RawRecord[]): CsvRecord[] =>
  records.map((r) =>
    r.error === undefined
      ? { line: r.line, raw: r.raw, fields: [], deferred: true as const }
      : { line: r.line, raw: r.raw, error: r.error, fields: [], deferred: true as const },
  );

/** Splits the fields of deferred records (others are returned as they are). */
export function splitFields(records: readonly CsvRecord[]): CsvRecord[] {
  if (!records.some((r) => r.deferred)) return [...records];
  const todo = records.filter((r) => r.deferred);
  const split = parseRecords(
    todo.map((r) => (r.error ? { line: r.line, raw: r.raw, error: r.error } : { line: r.line, raw: r.raw })),
  );
  let k = 0;
  return records.map((r) => (r.deferred ? split[k++]! : r));
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
  // Binary data (a zip or image given as CSV) shows NULs (an error record, see take) or undecodable
  // bytes in its first "line".
  if (head.error || (head.raw.match(/\uFFFD/g)?.length ?? 0) > 2) {
    await it.return(undefined);
    throw new FeedFormatError('the file is not CSV text');
  }
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
