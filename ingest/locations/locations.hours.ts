import type { HoursEntryJson } from '../../shared/tables.js';

/**
 * The hours grammar of the bulk-upload sheet (docs/feeds.md section 2) into the API's entries
 * (docs/decisions.md, Response shape). Pure: no I/O, so the whole grammar is tested as a table.
 *
 *   day cell      := '' | 'x' | range (',' range)*
 *   range         := time '-' time          (24-hour `08:30`, or 12-hour `8:30 AM`, `06:00am`)
 *   special cell  := entry (',' (entry | range))*
 *   entry         := YYYY-MM-DD ':' ('x' | range)
 */

export type HoursResult<T> = { ok: true; value: T } | { ok: false; reason: string };

interface Range {
  open: string;
  close: string;
}

const CLOSED: Range = { open: '00:00', close: '00:00' };
const MINUTES_PER_DAY = 24 * 60;

// 24-hour `8:30` / `08:30` / `24:00`; 12-hour `8:30 AM`, `08:30am`, `8 AM`, `8:30 a.m.`.
const TIME_24 = /^(\d{1,2}):(\d{2})$/;
const TIME_12 = /^(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s*m\.?$/i;
// Hyphen, en dash, em dash or `to` between the two times.
const RANGE = /^(.+?)\s*(?:-|–|—|\bto\b)\s*(.+)$/i;

const pad = (n: number) => String(n).padStart(2, '0');

/** Minutes since midnight, or a reason; `clock` says which form the time used. */
function parseTime(text: string): { minutes: number; clock: 12 | 24 } | string {
  const t = text.trim();
  const m24 = TIME_24.exec(t);
  if (m24) {
    const h = Number(m24[1]);
    const m = Number(m24[2]);
    if (m > 59 || h > 24 || (h === 24 && m !== 0)) return `"${t}" is not a time of day`;
    return { minutes: h * 60 + m, clock: 24 };
  }
  const m12 = TIME_12.exec(t);
  if (m12) {
    const h = Number(m12[1]);
    const m = m12[2] === undefined ? 0 : Number(m12[2]);
    if (h < 1 || h > 12 || m > 59) return `"${t}" is not a 12-hour time`;
    const pm = m12[3]!.toLowerCase() === 'p';
    return { minutes: ((h % 12) + (pm ? 12 : 0)) * 60 + m, clock: 12 };
  }
  return `"${t}" is not a time (HH:MM or HH:MM AM/PM)`;
}

const hhmm = (minutes: number) => `${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`;

/** One `open-close` range; a close at or before the open time runs past midnight. */
function parseRange(text: string): Range | string {
  const m = RANGE.exec(text.trim());
  if (!m) return `"${text.trim()}" is not a range like 09:00-17:00`;
  const open = parseTime(m[1]!);
  if (typeof open === 'string') return open;
  const close = parseTime(m[2]!);
  if (typeof close === 'string') return close;
  if (open.clock !== close.clock) return `"${text.trim()}" mixes 12-hour and 24-hour times`;
  if (open.minutes === MINUTES_PER_DAY) return `"${text.trim()}" opens at 24:00`;
  // Midnight to midnight, however it is written (`00:00-00:00`, `12:00 AM-12:00 AM`), is a whole day.
  if (open.minutes === 0 && (close.minutes === 0 || close.minutes === MINUTES_PER_DAY)) {
    return { open: '00:00', close: '24:00' };
  }
  if (open.minutes === close.minutes) return `"${text.trim()}" opens and closes at the same time`;
  // `24:00` only makes sense as the close of a day that opened earlier that same day.
  return { open: hhmm(open.minutes), close: hhmm(close.minutes) };
}

const toMinutes = (hm: string) => Number(hm.slice(0, 2)) * 60 + Number(hm.slice(3));

/** How a reason names the cell: a special-hours date as it is, a weekday cell quoted. */
const whereOf = (cell: string) => (/^\d{4}-\d{2}-\d{2}$/.test(cell) ? cell : `"${cell.trim()}"`);

/** Sorts ranges by opening time and refuses overlaps (a range past midnight ends the next day). */
function orderRanges(ranges: Range[], cell: string): Range[] | string {
  const sorted = [...ranges].sort((a, b) => toMinutes(a.open) - toMinutes(b.open));
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    const prevOpen = toMinutes(prev.open);
    let prevClose = toMinutes(prev.close);
    if (prevClose <= prevOpen) prevClose += MINUTES_PER_DAY;
    if (toMinutes(sorted[i]!.open) < prevClose) return `${whereOf(cell)}: ranges overlap`;
  }
  return sorted;
}

const COMMA = 44;
const SEMICOLON = 59;

/**
 * The parts of a sheet list cell (`a, b; c`): split at commas and semicolons, trimmed, empty parts
 * dropped. A loop rather than a regex split, map and filter: it runs several times per row of every
 * sheet, and those showed in the import's profile (the regex and two throwaway arrays per call).
 */
export function splitList(cell: string): string[] {
  const parts: string[] = [];
  let start = 0;
  for (let i = 0; i <= cell.length; i++) {
    const c = i < cell.length ? cell.charCodeAt(i) : COMMA;
    if (c !== COMMA && c !== SEMICOLON) continue;
    const part = cell.slice(start, i).trim();
    if (part !== '') parts.push(part);
    start = i + 1;
  }
  return parts;
}

const isClosedMark = (text: string) => text.trim().toLowerCase() === 'x';

/** Ranges of one day: `x` alone, or one or more ranges. `cell` names the day's cell or date in reasons. */
function parseRanges(parts: readonly string[], cell: string): Range[] | string {
  if (parts.length === 1 && isClosedMark(parts[0]!)) return [CLOSED];
  if (parts.some(isClosedMark)) return `${whereOf(cell)}: "x" (closed) cannot be combined with opening hours`;
  const ranges: Range[] = [];
  for (const part of parts) {
    const range = parseRange(part);
    if (typeof range === 'string') return range;
    ranges.push(range);
  }
  return ranges.length === 1 ? ranges : orderRanges(ranges, cell);
}

/**
 * One weekday cell. `null` means no hours given (an empty cell is not "closed"); otherwise one
 * entry per range in time order, or a single closed entry.
 */
export function parseDayHours(cell: string, day: number): HoursResult<HoursEntryJson[] | null> {
  const parts = splitList(cell);
  if (parts.length === 0) return { ok: true, value: null };
  const ranges = parseRanges(parts, cell);
  if (typeof ranges === 'string') return { ok: false, reason: ranges };
  const value: HoursEntryJson[] = [];
  for (const r of ranges) value.push({ day, open: r !== CLOSED, open_time: r.open, close_time: r.close });
  return { ok: true, value };
}

const DATE_PREFIX = /^(\d{4})-(\d{2})-(\d{2})\s*:\s*(.*)$/;

/** True when Y-M-D names a real calendar day (no 2026-02-30, no month 13). */
export function isRealDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  return d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
}

/**
 * The `Special hours` cell: dated entries, each `x` or a range; a bare range after an entry adds a
 * range to that entry's date. `null` when empty. Entries come out by date, then time.
 */
export function parseSpecialHours(cell: string): HoursResult<HoursEntryJson[] | null> {
  const parts = splitList(cell);
  if (parts.length === 0) return { ok: true, value: null };
  const byDate = new Map<string, string[]>();
  let current: string | undefined;
  for (const part of parts) {
    const dated = DATE_PREFIX.exec(part);
    if (dated) {
      const [, y, m, d, rest] = dated;
      if (!isRealDate(Number(y), Number(m), Number(d))) {
        return { ok: false, reason: `${y}-${m}-${d} is not a real date` };
      }
      current = `${y}-${m}-${d}`;
      byDate.set(current, [...(byDate.get(current) ?? []), rest!]);
    } else if (/^\d{4}-\d{1,2}-\d{1,2}\b/.test(part) || current === undefined) {
      return { ok: false, reason: `"${part}" is not an entry like 2026-12-24: 09:00-14:00 or 2026-12-25: x` };
    } else {
      byDate.get(current)!.push(part);
    }
  }
  const out: HoursEntryJson[] = [];
  for (const date of [...byDate.keys()].sort()) {
    const ranges = parseRanges(byDate.get(date)!, date);
    if (typeof ranges === 'string') return { ok: false, reason: ranges };
    for (const r of ranges) out.push({ date, open: r !== CLOSED, open_time: r.open, close_time: r.close });
  }
  return { ok: true, value: out };
}

type DayResult = HoursResult<HoursEntryJson[] | null>;

/** Distinct cell texts remembered per column; past this a column's memory starts afresh. */
const MAX_CELLS = 1000;

/** Freezes a parse result all the way down, so that sharing it between rows is safe. */
function frozen(result: DayResult): DayResult {
  if (result.ok && result.value !== null) {
    for (const entry of result.value) Object.freeze(entry);
    Object.freeze(result.value);
  }
  return Object.freeze(result);
}

/**
 * Parsed hours per distinct cell text, for one sheet. A sheet repeats a handful of hours cells
 * (`09:00-17:00`, `x`) over thousands of rows, so each text is parsed once. The results are frozen
 * and shared by every row with that text: merging and encoding only read them, and a stray write
 * would throw instead of silently changing other rows. Memory is bounded per column.
 */
export class HoursCache {
  // Entries carry their weekday, so each weekday has its own memory.
  private readonly days = Array.from({ length: 7 }, () => new Map<string, DayResult>());
  private readonly special = new Map<string, DayResult>();

  /** parseDayHours, remembered. */
  day(cell: string, day: number): DayResult {
    const memo = this.days[day]!;
    return memo.get(cell) ?? remember(memo, cell, parseDayHours(cell, day));
  }

  /** parseSpecialHours, remembered. */
  specialHours(cell: string): DayResult {
    return this.special.get(cell) ?? remember(this.special, cell, parseSpecialHours(cell));
  }
}

function remember(memo: Map<string, DayResult>, cell: string, result: DayResult): DayResult {
  if (memo.size >= MAX_CELLS) memo.clear();
  memo.set(cell, frozen(result));
  return result;
}
