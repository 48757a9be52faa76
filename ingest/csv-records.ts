import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';
import { FeedFormatError } from '../shared/errors.js';
import { badLines, unfinishedTail } from './csv-utf8.js';

/**
 * Cutting a stream of bytes into CSV records (csv.ts): a quote-parity scan, which is all RFC 4180
 * needs to find where records end. A RecordCutter holds what one reading needs between chunks (the
 * text not cut yet, where the scan is, the line it is on); rawRecords feeds it the stream's chunks.
 */
export interface RawRecord {
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
export const HAS_NUL = 'contains a NUL (0x00) character, shown as ␀';
/** Why a record whose bytes are not UTF-8 is rejected (its raw text shows each bad byte as U+FFFD). */
export const NOT_UTF8 = 'not valid UTF-8 text (the file may be Windows-1252 or Latin-1: save it as UTF-8)';
/** Why a file whose lines end in a bare CR fails. */
export const CR_ONLY = 'lines end in CR only (old Mac format): save the file with LF or CRLF line endings';
/** A CR followed by something other than LF. */
export const BARE_CR = /\r[^\n]/;

/**
 * Cuts decoded text into records; blank lines are skipped (but counted). Yields the records each
 * chunk of input completes, as one array (possibly empty): one await per chunk rather than one per
 * record, which was a visible share of reading a large sheet.
 */
export async function* rawRecords(stream: Readable, maxChars: number): AsyncGenerator<RawRecord[]> {
  const cutter = new RecordCutter(maxChars);
  for await (const chunk of stream) {
    // A stream of strings (an object-mode source such as Readable.from([text])) is taken as UTF-8 bytes.
    const error = cutter.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : (chunk as Buffer));
    yield cutter.found();
    if (error) throw error;
  }
  const error = cutter.end();
  yield cutter.found();
  if (error) throw error;
}

class RecordCutter {
  /** Bytes of a character the last chunk began and did not finish. */
  private held: Buffer | undefined;
  private buf = '';
  /** Start of the current record in buf. */
  private start = 0;
  /** Scan position. */
  private pos = 0;
  private inQuotes = false;
  /** Physical line of buf[start]. */
  private line = 1;
  /** Line breaks between start and pos. */
  private linesInRecord = 0;
  /** No text appended yet (a BOM may come first). */
  private atStart = true;
  private out: RawRecord[] = [];
  /** Set once any chunk held a NUL: only then is each record searched for one. */
  private sawNul = false;
  /** Positions in buf, ascending, inside lines whose bytes are not valid UTF-8 (see badLines). */
  private notUtf8: number[] = [];
  /**
   * sawNul, or notUtf8 not empty: only then does a record take the longer way (takeOdd), so take, the
   * reader's hottest method, does for valid text what it did before the UTF-8 check: one flag test.
   */
  private odd = false;
  /**
   * A record longer than maxChars whose first line has not ended yet was taken (rejected): the rest
   * of that line is dropped as it arrives, up to its line break.
   */
  private skipLine = false;

  constructor(private readonly maxChars: number) {}

  /** Takes the next chunk of bytes; returns the error that ends the file, after the records before it. */
  push(chunk: Buffer): FeedFormatError | undefined {
    let bytes = chunk;
    if (this.held) {
      bytes = Buffer.concat([this.held, bytes]);
      this.held = undefined;
    }
    const unfinished = unfinishedTail(bytes);
    if (unfinished > 0) {
      this.held = Buffer.from(bytes.subarray(bytes.length - unfinished));
      bytes = bytes.subarray(0, bytes.length - unfinished);
    }
    this.append(bytes);
    return this.scan();
  }

  /** The input has ended: takes the last record, or returns the error that ends the file. */
  end(): FeedFormatError | undefined {
    // A character the file ends inside: not UTF-8, and part of the last record.
    this.append(this.held ?? Buffer.alloc(0));
    const error = this.scan();
    if (error) return error;
    if (this.start < this.buf.length)
      this.take(this.buf.length, this.inQuotes ? UNTERMINATED_AT_END : undefined);
    return undefined;
  }

  /** The records found since the last call. */
  found(): RawRecord[] {
    const records = this.out;
    this.out = [];
    return records;
  }

  private dropNotUtf8Before(at: number): void {
    let k = 0;
    while (k < this.notUtf8.length && this.notUtf8[k]! < at) k++;
    if (k > 0) this.notUtf8 = this.notUtf8.slice(k);
    this.odd = this.sawNul || this.notUtf8.length > 0;
  }

  /** A record (`raw`, ending at `end` in buf) read while a NUL or bytes that are not UTF-8 were seen. */
  private takeOdd(text: string, end: number, error: string | undefined): void {
    let raw = text;
    if (this.sawNul && raw.includes(NUL)) {
      // Postgres text cannot hold a NUL: the record is rejected here (its raw text kept, the NUL shown
      // as ␀) instead of failing the batch it would reach the database in.
      raw = raw.replaceAll(NUL, NUL_SHOWN);
      error ??= HAS_NUL;
    }
    if (this.notUtf8.length > 0 && this.notUtf8[0]! <= end) {
      error ??= NOT_UTF8;
      this.dropNotUtf8Before(end + 1);
    }
    if (raw.length > 0) this.out.push(error ? { line: this.line, raw, error } : { line: this.line, raw });
  }

  private take(end: number, error?: string): void {
    let raw = this.buf.slice(this.start, end);
    if (raw.charCodeAt(raw.length - 1) === CR) raw = raw.slice(0, -1);
    if (this.odd) this.takeOdd(raw, end, error);
    else if (raw.length > 0)
      this.out.push(error ? { line: this.line, raw, error } : { line: this.line, raw });
    this.line += this.linesInRecord + 1;
    this.linesInRecord = 0;
    this.start = end + 1;
  }

  /** Drops the rest of a line whose start was taken as too long (skipLine), as far as it has come. */
  private skipRestOfLine(): void {
    const nl = this.buf.indexOf('\n', this.start);
    this.start = nl < 0 ? this.buf.length : nl + 1;
    this.pos = this.start;
    this.dropNotUtf8Before(this.start);
    if (nl >= 0) this.skipLine = false;
  }

  /**
   * Whole records first (RECORD), as long as they are complete and of a sane length: the common case.
   * What is left (a partial record at the end of the text, or an overlong one) goes to `scan`.
   */
  private wholeRecords(): void {
    const buf = this.buf;
    // A partial record left by the last chunk is read again from its start (the same result as
    // going on from where `scan` stopped in it: the scan only depends on the text from `start`).
    this.pos = this.start;
    this.inQuotes = false;
    this.linesInRecord = 0;
    RECORD.lastIndex = this.start;
    while (RECORD.test(buf)) {
      const nl = RECORD.lastIndex - 1;
      if (nl - this.start > this.maxChars) break;
      // A record with quoted line breaks counts them (its first line break is not its end).
      const first = buf.indexOf('\n', this.start);
      if (first < nl) for (let i = first; i < nl; i = buf.indexOf('\n', i + 1)) this.linesInRecord++;
      this.take(nl);
      RECORD.lastIndex = this.start;
    }
    this.pos = this.start;
  }

  /**
   * Jumps from quote to quote and line break to line break with indexOf (native, fast) instead of
   * looking at every character; the next line break is remembered until the scan passes it. Returns
   * the error that ends the file, after the records before it have been taken.
   */
  private scan(): FeedFormatError | undefined {
    if (this.skipLine) this.skipRestOfLine();
    if (this.skipLine) return undefined;
    this.wholeRecords();
    const buf = this.buf;
    const len = buf.length;
    let nl = buf.indexOf('\n', this.pos);
    while (this.pos < len) {
      if (nl >= 0 && nl < this.pos) nl = buf.indexOf('\n', this.pos);
      const q = buf.indexOf('"', this.pos);
      if (this.inQuotes) {
        if (nl >= 0 && (q < 0 || nl < q)) {
          // A line break inside a quoted field belongs to the record.
          this.linesInRecord++;
          this.pos = nl + 1;
        } else if (q >= 0) {
          this.inQuotes = false;
          this.pos = q + 1;
        } else this.pos = len;
        if (this.pos - this.start > this.maxChars) {
          this.giveUpOnRecord(len);
          nl = buf.indexOf('\n', this.pos);
        }
      } else if (nl >= 0 && (q < 0 || nl < q)) {
        this.take(nl);
        this.pos = this.start;
      } else if (q >= 0) {
        this.inQuotes = true;
        this.pos = q + 1;
      } else {
        // No record end in sight: a text file has lines far shorter than this; binary data may not, nor
        // a file whose lines end in CR alone.
        if (len - this.start > this.maxChars)
          return new FeedFormatError(
            BARE_CR.test(buf.slice(this.start, len))
              ? CR_ONLY
              : `line ${this.line} is too long: not a CSV file`,
          );
        this.pos = len;
      }
    }
    return undefined;
  }

  /**
   * Unbalanced quote: gives up on this record's first physical line and resynchronises after it. A
   * first line that has not ended yet is longer than maxChars itself: what was read of it is the
   * rejected record, and the rest of it is dropped as it comes (skipLine), so it is neither a record
   * of its own nor a line counted twice.
   */
  private giveUpOnRecord(len: number): void {
    const first = this.buf.indexOf('\n', this.start);
    this.linesInRecord = 0;
    this.take(first < 0 ? len : first, 'unbalanced quotes (record too long)');
    if (first < 0) {
      this.skipLine = true;
      this.start = len;
    }
    this.pos = this.start;
    this.inQuotes = false;
  }

  /**
   * Decodes the next bytes onto the end of buf. The input is cut only between characters (a
   * character the bytes do not finish waits for the next chunk), so each piece decodes as the whole
   * would. Bytes that are not UTF-8 decode to U+FFFD, so a piece whose text has none is valid: that
   * search is all a valid file pays (about 1 ms for 80 MB: V8 answers at once for text without
   * characters above U+00FF). Only a piece with a U+FFFD has its bytes checked (isUtf8, native), and
   * only one that fails is looked at line by line (badLines): a real U+FFFD in UTF-8 text is kept.
   */
  private append(bytes: Buffer): void {
    let text = bytes.toString('utf8');
    let bad = text.includes('\uFFFD') && !isUtf8(bytes) ? badLines(bytes, text) : undefined;
    if (this.atStart && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) {
        text = text.slice(1);
        bad = bad?.map((p) => Math.max(0, p - 1));
      }
      this.atStart = false;
    }
    if (!this.sawNul && text.includes(NUL)) this.sawNul = this.odd = true;
    // Drop what was consumed so the buffer holds at most one partial record plus one chunk.
    const start = this.start;
    this.buf = this.buf.slice(start) + text;
    this.pos -= start;
    if (this.notUtf8.length > 0) this.notUtf8 = this.notUtf8.map((p) => p - start);
    this.start = 0;
    if (bad) {
      const base = this.buf.length - text.length;
      for (const p of bad) this.notUtf8.push(base + p);
      this.odd = true;
    }
  }
}
