import Papa from 'papaparse';
import type { CsvRecord } from './csv.js';
import type { RawRecord } from './csv-records.js';

/**
 * Splitting records into fields: most with simpleFields (the register quotes every field and rarely
 * doubles a quote), the rest with papaparse, one call per batch.
 */

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

export function parseOne(rec: RawRecord): CsvRecord {
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
export const deferRecords = (records: RawRecord[]): CsvRecord[] =>
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
