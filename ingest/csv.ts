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
}

export interface CsvReaderOptions {
  /** Records per batch (default 2000). */
  batchSize?: number;
  /** A record longer than this is malformed (a stray quote would otherwise swallow the file). */
  maxRecordChars?: number;
}

export interface CsvReader {
  /** Header names, trimmed. */
  header: string[];
  headerLine: number;
  /** Data records in batches; each batch is read only when asked for. */
  batches: AsyncGenerator<CsvRecord[], void, undefined>;
}

interface RawRecord {
  line: number;
  raw: string;
  error?: string;
}

const CR = 13;

/** Cuts decoded text into records; blank lines are skipped (but counted). */
async function* rawRecords(stream: Readable, maxChars: number): AsyncGenerator<RawRecord> {
  const decoder = new StringDecoder('utf8');
  let buf = '';
  let start = 0; // start of the current record in buf
  let pos = 0; // scan position
  let inQuotes = false;
  let line = 1; // physical line of buf[start]
  let linesInRecord = 0; // line breaks between start and pos
  let first = true;

  const take = (end: number, error?: string): RawRecord | null => {
    let raw = buf.slice(start, end);
    if (raw.charCodeAt(raw.length - 1) === CR) raw = raw.slice(0, -1);
    const rec = raw.length === 0 ? null : { line, raw, ...(error ? { error } : {}) };
    line += linesInRecord + 1;
    linesInRecord = 0;
    start = end + 1;
    return rec;
  };

  // Jumps from quote to quote and line break to line break with indexOf (native, fast) instead of
  // looking at every character; the next line break is remembered until the scan passes it.
  const scan = function* (): Generator<RawRecord> {
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
          const rec = take(end, 'unbalanced quotes (record too long)');
          if (rec) yield rec;
          pos = start;
          inQuotes = false;
          nl = buf.indexOf('\n', pos);
        }
      } else if (nl >= 0 && (q < 0 || nl < q)) {
        const rec = take(nl);
        if (rec) yield rec;
        pos = start;
      } else if (q >= 0) {
        inQuotes = true;
        pos = q + 1;
      } else {
        // No record end in sight: a text file has lines far shorter than this; binary data may not.
        if (len - start > maxChars) throw new FeedFormatError(`line ${line} is too long: not a CSV file`);
        pos = len;
      }
    }
  };

  for await (const chunk of stream) {
    let text = decoder.write(chunk as Buffer);
    if (first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    // Drop what was consumed so the buffer holds at most one partial record plus one chunk.
    buf = buf.slice(start) + text;
    pos -= start;
    start = 0;
    yield* scan();
  }
  buf = buf.slice(start) + decoder.end();
  pos -= start;
  start = 0;
  yield* scan();
  if (start < buf.length) {
    const rec = take(buf.length, inQuotes ? 'unterminated quoted field at end of file' : undefined);
    if (rec) yield rec;
  }
}

const PARSE_CONFIG = {
  delimiter: ',',
  newline: '\n',
  quoteChar: '"',
  escapeChar: '"',
  header: false,
  dynamicTyping: false,
  skipEmptyLines: false,
} as const;

function parseOne(rec: RawRecord): CsvRecord {
  if (rec.error) return { ...rec, fields: [], error: rec.error };
  const result = Papa.parse<string[]>(rec.raw, PARSE_CONFIG);
  if (result.data.length !== 1) return { ...rec, fields: [], error: 'malformed quoting' };
  const error = result.errors[0];
  return {
    ...rec,
    fields: result.data[0]!,
    ...(error ? { error: `malformed quoting (${error.message})` } : {}),
  };
}

/** Splits the fields of a batch in one papaparse call; falls back to one call per record if unsure. */
export function parseRecords(records: RawRecord[]): CsvRecord[] {
  if (records.some((r) => r.error)) return records.map(parseOne);
  const result = Papa.parse<string[]>(records.map((r) => r.raw).join('\n'), PARSE_CONFIG);
  if (result.data.length !== records.length) return records.map(parseOne);
  const errors = new Map<number, string>();
  for (const e of result.errors)
    if (e.row !== undefined) errors.set(e.row, `malformed quoting (${e.message})`);
  return records.map((r, i) => {
    const error = errors.get(i);
    return { line: r.line, raw: r.raw, fields: result.data[i]!, ...(error ? { error } : {}) };
  });
}

async function* batchesOf(it: AsyncGenerator<RawRecord>, size: number): AsyncGenerator<CsvRecord[]> {
  let pending: RawRecord[] = [];
  for await (const rec of it) {
    pending.push(rec);
    if (pending.length >= size) {
      yield parseRecords(pending);
      pending = [];
    }
  }
  if (pending.length > 0) yield parseRecords(pending);
}

/**
 * Reads the header and returns the batches of data records. Throws FeedFormatError when the input
 * is empty or not CSV text.
 */
export async function openCsv(stream: Readable, options: CsvReaderOptions = {}): Promise<CsvReader> {
  const maxChars = options.maxRecordChars ?? 1024 * 1024;
  const it = rawRecords(stream, maxChars);
  const first = await it.next();
  if (first.done) throw new FeedFormatError('the file is empty');
  const head = first.value;
  // Binary data (a zip or image given as CSV) shows NULs or undecodable bytes in its first "line".
  if (head.error || head.raw.includes('\u0000') || (head.raw.match(/\uFFFD/g)?.length ?? 0) > 2) {
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
    batches: batchesOf(it, options.batchSize ?? 2000),
  };
}
