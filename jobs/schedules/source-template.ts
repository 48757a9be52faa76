/**
 * A schedule's sources, as templates of the date of the run. The register is published monthly,
 * as one zip or as parts whose names carry the month
 * (`BasicCompanyData-2026-12-01-part1_7.zip` … `part7_7.zip`), so a schedule names them once:
 *
 *   https://…/BasicCompanyData-{yyyy}-{mm}-01-part{1..7}_7.zip
 *
 * Placeholders: `{yyyy}` (year), `{mm}` (month, 01-12), `{dd}` (day, 01-31), and `{N..M}`, a range
 * of whole numbers that makes one source of each (`{01..07}` pads them to the width written). A
 * template without placeholders is one plain source. The finest date placeholder of a schedule sets
 * the period its runs look for: a day, a month or a year.
 *
 * Written here rather than with a brace-expansion library: the grammar is three names and one
 * range, and a library would also accept lists and nesting that a schedule must refuse.
 */

export class SourceTemplateError extends Error {
  override name = 'SourceTemplateError';
}

/** At most this many sources per schedule (ranges included). */
export const MAX_SOURCES = 100;

export type Period = 'day' | 'month' | 'year';

type Piece =
  | { kind: 'text'; text: string }
  | { kind: 'date'; field: 'yyyy' | 'mm' | 'dd' }
  | { kind: 'range'; from: number; to: number; width: number };

const DATE_FIELDS = new Set(['yyyy', 'mm', 'dd']);
const RANGE = /^(\d{1,6})\.\.(\d{1,6})$/;

function parse(template: string): Piece[] {
  const pieces: Piece[] = [];
  let rest = template;
  while (rest.length > 0) {
    const open = rest.indexOf('{');
    const close = rest.indexOf('}');
    if (close >= 0 && (open < 0 || close < open))
      throw new SourceTemplateError(`"${template}": a "}" without its "{"`);
    if (open < 0) {
      pieces.push({ kind: 'text', text: rest });
      break;
    }
    if (open > 0) pieces.push({ kind: 'text', text: rest.slice(0, open) });
    const end = rest.indexOf('}', open);
    if (end < 0) throw new SourceTemplateError(`"${template}": a "{" without its "}"`);
    const name = rest.slice(open + 1, end);
    rest = rest.slice(end + 1);
    if (DATE_FIELDS.has(name)) {
      pieces.push({ kind: 'date', field: name as 'yyyy' | 'mm' | 'dd' });
      continue;
    }
    const range = RANGE.exec(name);
    if (!range) {
      throw new SourceTemplateError(
        `"${template}": unknown placeholder {${name}} (known: {yyyy} {mm} {dd} and ranges such as {1..7})`,
      );
    }
    const [, a, b] = range as unknown as [string, string, string];
    const from = Number(a);
    const to = Number(b);
    if (to < from) throw new SourceTemplateError(`"${template}": the range {${name}} runs backwards`);
    if (to - from + 1 > MAX_SOURCES) {
      throw new SourceTemplateError(
        `"${template}": the range {${name}} makes ${to - from + 1} sources; at most ${MAX_SOURCES}`,
      );
    }
    // `{01..07}`: written with a leading zero, the numbers keep the width written.
    const padded = (a.length > 1 && a.startsWith('0')) || (b.length > 1 && b.startsWith('0'));
    pieces.push({ kind: 'range', from, to, width: padded ? Math.max(a.length, b.length) : 0 });
  }
  return pieces;
}

/** The date a run resolves its templates for (in the schedule's time zone). */
export interface PeriodDate {
  year: number;
  /** 1-12 */
  month: number;
  /** 1-31 */
  day: number;
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

function expandOne(pieces: readonly Piece[], date: PeriodDate): string[] {
  let out = [''];
  for (const piece of pieces) {
    if (piece.kind === 'text') out = out.map((s) => s + piece.text);
    else if (piece.kind === 'date') {
      const value =
        piece.field === 'yyyy' ? pad(date.year, 4) : pad(piece.field === 'mm' ? date.month : date.day, 2);
      out = out.map((s) => s + value);
    } else {
      const next: string[] = [];
      for (const s of out) for (let n = piece.from; n <= piece.to; n++) next.push(s + pad(n, piece.width));
      out = next;
    }
  }
  return out;
}

/** A schedule's templates, parsed and checked once. */
export class SourceTemplates {
  private readonly parsed: { template: string; pieces: Piece[] }[];
  /** The period a run looks for; null when no template names a date (the sources never change). */
  readonly period: Period | null;

  /** Throws SourceTemplateError for a malformed template or more than MAX_SOURCES sources in all. */
  constructor(readonly templates: readonly string[]) {
    if (templates.length === 0) throw new SourceTemplateError('a schedule needs at least one source');
    this.parsed = templates.map((template) => ({ template, pieces: parse(template) }));
    const fields = new Set(
      this.parsed.flatMap((t) => t.pieces.flatMap((p) => (p.kind === 'date' ? [p.field] : []))),
    );
    this.period = fields.has('dd') ? 'day' : fields.has('mm') ? 'month' : fields.has('yyyy') ? 'year' : null;
    const sample = this.expand({ year: 2000, month: 1, day: 1 });
    const count = sample.reduce((n, s) => n + s.sources.length, 0);
    if (count > MAX_SOURCES)
      throw new SourceTemplateError(`the sources make ${count} sources in all; at most ${MAX_SOURCES}`);
    const all = sample.flatMap((s) => s.sources);
    const twice = all.find((s, i) => all.indexOf(s) !== i);
    if (twice !== undefined) throw new SourceTemplateError(`"${twice}" is given twice`);
  }

  /** Each template with the sources it makes for `date`, in order (ranges ascending). */
  expand(date: PeriodDate): { template: string; dated: boolean; sources: string[] }[] {
    return this.parsed.map(({ template, pieces }) => ({
      template,
      dated: pieces.some((p) => p.kind === 'date'),
      sources: expandOne(pieces, date),
    }));
  }
}

/** The calendar date of `at` in time zone `tz`. */
export function dateIn(at: Date, tz: string): PeriodDate {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: tz,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).formatToParts(at);
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  return { year: get('year'), month: get('month'), day: get('day') };
}

/** The date `back` periods before `date` (a month back from 31 March is the end of February). */
export function periodsBefore(date: PeriodDate, period: Period, back: number): PeriodDate {
  if (period === 'day') {
    const d = new Date(Date.UTC(date.year, date.month - 1, date.day - back));
    return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
  }
  if (period === 'year') return { ...date, year: date.year - back };
  const index = date.year * 12 + (date.month - 1) - back;
  const year = Math.floor(index / 12);
  const month = (index % 12) + 1;
  const last = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return { year, month, day: Math.min(date.day, last) };
}

/** How a period is written in messages: 2026-12-01, 2026-12, 2026. */
export function periodLabel(date: PeriodDate, period: Period | null): string {
  if (period === 'year') return pad(date.year, 4);
  if (period === 'month') return `${pad(date.year, 4)}-${pad(date.month, 2)}`;
  return `${pad(date.year, 4)}-${pad(date.month, 2)}-${pad(date.day, 2)}`;
}
