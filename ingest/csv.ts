import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';
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
const HAS_NUL = 'contains a NUL (0x00) character, shown as ␀';
/** Why a record whose bytes are not UTF-8 is rejected (its raw text shows each bad byte as U+FFFD). */
export const NOT_UTF8 = 'not valid UTF-8 text (the file may be Windows-1252 or Latin-1: save it as UTF-8)';
/** Why a file whose lines end in a bare CR fails. */
export const CR_ONLY = 'lines end in CR only (old Mac format): save the file with LF or CRLF line endings';
/** A CR followed by something other than LF. */
const BARE_CR = /\r[^\n]/;

/**
 * How many bytes at the end of `bytes` begin a character that the next chunk finishes (0-3). Cutting
 * the input there, before a lead byte, decodes each piece to the same text as the whole would.
 */
function unfinishedTail(bytes: Buffer): number {
  const n = bytes.length;
  for (let k = 1; k <= 3 && k <= n; k++) {
    const b = bytes[n - k]!;
    if (b < 0x80) return 0;
    if (b >= 0xc0) return (b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2) > k ? k : 0;
  }
  return 0;
}

/**
 * Where in `text` (`bytes` decoded) the lines, or parts of lines, whose bytes are not valid UTF-8
 * begin. Only called for a piece that is not valid as a whole (a file that is valid UTF-8 never
 * comes here, whatever characters it holds, U+FFFD included). An LF byte is always the character
 * LF (the decoder never swallows it into a U+FFFD), so the n-th line of the bytes is the n-th line of
 * the text; each line's bytes are checked on their own.
 */
function badLines(bytes: Buffer, text: string): number[] {
  const found: number[] = [];
  let b = 0;
  let c = 0;
  for (;;) {
    const lf = bytes.indexOf(10, b);
    if (!isUtf8(bytes.subarray(b, lf < 0 ? bytes.length : lf))) found.push(c);
    if (lf < 0) return found;
    b = lf + 1;
    c = text.indexOf('\n', c) + 1;
  }
}

/**
 * Cuts decoded text into records; blank lines are skipped (but counted). Yields the records each
 * chunk of input completes, as one array (possibly empty): one await per chunk rather than one per
 * record, which was a visible share of reading a large sheet.
 */
async function* rawRecords(stream: Readable, maxChars: number): AsyncGenerator<RawRecord[]> {
  // Bytes of a character the last chunk began and did not finish.
  let held: Buffer | undefined;
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
  // Positions in buf, ascending, inside lines whose bytes are not valid UTF-8 (see badLines).
  let notUtf8: number[] = [];
  // sawNul, or notUtf8 not empty: only then does a record take the longer way (takeOdd), so take, the
  // reader's hottest function, does for valid text what it did before the UTF-8 check: one flag test.
  let odd = false;
  // A record longer than maxChars whose first line has not ended yet was taken (rejected): the rest
  // of that line is dropped as it arrives, up to its line break.
  let skipLine = false;

  const dropNotUtf8Before = (at: number): void => {
    let k = 0;
    while (k < notUtf8.length && notUtf8[k]! < at) k++;
    if (k > 0) notUtf8 = notUtf8.slice(k);
    odd = sawNul || notUtf8.length > 0;
  };

  /** A record (`raw`, ending at `end` in buf) read while a NUL or bytes that are not UTF-8 were seen. */
  const takeOdd = (raw: string, end: number, error: string | undefined): void => {
    if (sawNul && raw.includes(NUL)) {
      // Postgres text cannot hold a NUL: the record is rejected here (its raw text kept, the NUL shown
      // as ␀) instead of failing the batch it would reach the database in.
      raw = raw.replaceAll(NUL, NUL_SHOWN);
      error ??= HAS_NUL;
    }
    if (notUtf8.length > 0 && notUtf8[0]! <= end) {
      error ??= NOT_UTF8;
      dropNotUtf8Before(end + 1);
    }
    if (raw.length > 0) out.push(error ? { line, raw, error } : { line, raw });
  };

  const take = (end: number, error?: string): void => {
    let raw = buf.slice(start, end);
    if (raw.charCodeAt(raw.length - 1) === CR) raw = raw.slice(0, -1);
    if (odd) takeOdd(raw, end, error);
    else if (raw.length > 0) out.push(error ? { line, raw, error } : { line, raw });
    line += linesInRecord + 1;
    linesInRecord = 0;
    start = end + 1;
  };

  /** Drops the rest of a line whose start was taken as too long (skipLine), as far as it has come. */
  const skipRestOfLine = (): void => {
    const nl = buf.indexOf('\n', start);
    start = nl < 0 ? buf.length : nl + 1;
    pos = start;
    dropNotUtf8Before(start);
    if (nl >= 0) skipLine = false;
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
    if (skipLine) skipRestOfLine();
    if (skipLine) return undefined;
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
          // A first line that has not ended yet is longer than maxChars itself: what was read of it is
          // the rejected record, and the rest of it is dropped as it comes (skipLine), so it is neither
          // a record of its own nor a line counted twice.
          const first = buf.indexOf('\n', start);
          linesInRecord = 0;
          take(first < 0 ? len : first, 'unbalanced quotes (record too long)');
          if (first < 0) {
            skipLine = true;
            start = len;
          }
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
        // No record end in sight: a text file has lines far shorter than this; binary data may not, nor
        // a file whose lines end in CR alone.
        if (len - start > maxChars)
          return new FeedFormatError(
            BARE_CR.test(buf.slice(start, len)) ? CR_ONLY : `line ${line} is too long: not a CSV file`,
          );
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

  /**
   * Decodes the next bytes onto the end of buf. The input is cut only between characters (a
   * character the bytes do not finish waits for the next chunk), so each piece decodes as the whole
   * would. Bytes that are not UTF-8 decode to U+FFFD, so a piece whose text has none is valid: that
   * search is all a valid file pays (about 1 ms for 80 MB: V8 answers at once for text without
   * characters above U+00FF). Only a piece with a U+FFFD has its bytes checked (isUtf8, native), and
   * only one that fails is looked at line by line (badLines): a real U+FFFD in UTF-8 text is kept.
   */
  const append = (bytes: Buffer): void => {
    let text = bytes.toString('utf8');
    let bad = text.includes('\uFFFD') && !isUtf8(bytes) ? badLines(bytes, text) : undefined;
    if (first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) {
        text = text.slice(1);
        bad = bad?.map((p) => Math.max(0, p - 1));
      }
      first = false;
    }
    if (!sawNul && text.includes(NUL)) sawNul = odd = true;
    // Drop what was consumed so the buffer holds at most one partial record plus one chunk.
    buf = buf.slice(start) + text;
    pos -= start;
    if (notUtf8.length > 0) notUtf8 = notUtf8.map((p) => p - start);
    start = 0;
    if (bad) {
      const base = buf.length - text.length;
      for (const p of bad) notUtf8.push(base + p);
      odd = true;
    }
  };

  for await (const chunk of stream) {
    // A stream of strings (an object-mode source such as Readable.from([text])) is taken as UTF-8 bytes.
    let bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : (chunk as Buffer);
    if (held) {
      bytes = Buffer.concat([held, bytes]);
      held = undefined;
    }
    const unfinished = unfinishedTail(bytes);
    if (unfinished > 0) {
      held = Buffer.from(bytes.subarray(bytes.length - unfinished));
      bytes = bytes.subarray(0, bytes.length - unfinished);
    }
    append(bytes);
    const error = scan();
    yield found();
    if (error) throw error;
  }
  // A character the file ends inside: not UTF-8, and part of the last record.
  append(held ?? Buffer.alloc(0));
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
