import { nextRun } from '../../jobs/schedules/cron.js';
import type { ScheduleWithLastRun } from '../../jobs/schedules/schedule.repository.js';
import type { Probe } from '../../jobs/schedules/source-fingerprint.js';
import { candidateDates, resolveSources, sourcesFor } from '../../jobs/schedules/source-resolution.js';
import { periodLabel, SourceTemplateError, SourceTemplates } from '../../jobs/schedules/source-template.js';

/** How `schedule list|show` present a schedule (the `--json` objects and the text built from them). */

export const fmt = (d: Date | null | undefined) => (d ? d.toISOString().replace(/\.\d{3}Z$/, 'Z') : '-');

export interface SourceView {
  template: string;
  /** The sources it makes for the next run's period. */
  next: string[];
}

export interface ScheduleView {
  name: string;
  job: ScheduleWithLastRun['job'];
  feed: string | null;
  /** The templates as written, space-separated (one plain source: that source). */
  source: string;
  sources: SourceView[];
  /** The period the next run looks for first ('2026-12'), null when the sources name no date. */
  next_period: string | null;
  /** The earlier periods it falls back to when that one is not published. */
  fallback_periods: string[];
  cron: string;
  tz: string;
  options: ScheduleWithLastRun['options'];
  when_grown: number | null;
  next_run: string;
  last_run: { id: number; at: string; result: string | null; error: string | null } | null;
}

export function scheduleView(s: ScheduleWithLastRun, now = new Date()): ScheduleView {
  const next = nextRun(s.cron, s.tz, now);
  let sources: SourceView[] = [];
  let period: string | null = null;
  let fallback: string[] = [];
  if (s.job === 'import') {
    try {
      const templates = new SourceTemplates(s.sources);
      const dates = candidateDates(templates, next, s.tz);
      const labels = templates.period === null ? [] : dates.map((d) => periodLabel(d, templates.period));
      period = labels[0] ?? null;
      fallback = labels.slice(1);
      const flat = sourcesFor(templates, dates[0]!);
      sources = s.sources.map((template) => ({
        template,
        next: flat.filter((f) => f.template === template).map((f) => f.location),
      }));
    } catch (error) {
      // A definition `schedule set` did not write: shown as stored, its runs fail with the reason.
      if (!(error instanceof SourceTemplateError)) throw error;
      sources = s.sources.map((template) => ({ template, next: [] }));
    }
  }
  return {
    name: s.name,
    job: s.job,
    feed: s.feed,
    source: s.sources.join(' '),
    sources,
    next_period: period,
    fallback_periods: fallback,
    cron: s.cron,
    tz: s.tz,
    options: s.options,
    when_grown: s.when_grown,
    next_run: fmt(next),
    last_run:
      s.last_run_id === null
        ? null
        : {
            id: s.last_run_id,
            at: fmt(s.last_run_at),
            result: s.last_run_status,
            error: s.last_run_error,
          },
  };
}

/** What the schedule runs, as it was set: `registrar --full`, `reindex --when-grown 1.3`. */
export function jobLabel(v: ScheduleView): string {
  if (v.job === 'reindex-verify') return 'reindex --verify';
  if (v.job === 'reindex') return `reindex${v.when_grown !== null ? ` --when-grown ${v.when_grown}` : ''}`;
  const o = v.options;
  return [
    v.feed,
    o.full ? '--full' : '',
    o.max_gone !== undefined ? `--max-gone ${o.max_gone}` : '',
    o.org ? `--org ${o.org}` : '',
  ]
    .filter(Boolean)
    .join(' ');
}

/** What a run started now would read: which period, and whether all its sources are there. */
export interface CheckView {
  result: 'found' | 'incomplete' | 'none' | 'unreachable';
  period: string | null;
  sources: string[];
  message: string;
}

export async function checkNow(v: ScheduleView, probe: Probe, now = new Date()): Promise<CheckView> {
  const templates = new SourceTemplates(v.sources.map((s) => s.template));
  try {
    const r = await resolveSources(templates, now, v.tz, probe);
    if (r.kind === 'none') return { result: 'none', period: null, sources: [], message: r.message };
    const sources = r.sources.map((s) => s.location);
    if (r.kind === 'incomplete')
      return { result: 'incomplete', period: r.period, sources, message: r.message };
    const skipped = r.notPublished.length > 0 ? ` (${r.notPublished.join(', ')} not published)` : '';
    const what = sources.length === 1 ? 'its source is there' : `all ${sources.length} sources are there`;
    return {
      result: 'found',
      period: r.period,
      sources,
      message: `${r.period === null ? '' : `${r.period}: `}${what}${skipped}`,
    };
  } catch (error) {
    return {
      result: 'unreachable',
      period: null,
      sources: [],
      message: `cannot check ${(error as Error).message}`,
    };
  }
}

function table(rows: Record<string, string>[]): string[] {
  const headers = Object.keys(rows[0]!);
  const widths = headers.map((h) => Math.max(h.length, ...rows.map((r) => r[h]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map((r) => line(headers.map((h) => r[h]!)))];
}

const lastRunText = (v: ScheduleView) => (v.last_run ? `#${v.last_run.id} ${v.last_run.at}` : '-');

/** Where a period's sources are listed: all of them, or the first and last of a long list. */
function sourceLines(sources: readonly string[], indent: string): string[] {
  const shown =
    sources.length <= 8 ? sources : [sources[0]!, `… (${sources.length - 2} more)`, sources.at(-1)!];
  return shown.map((s) => `${indent}${s}`);
}

export function listText(views: readonly ScheduleView[]): string[] {
  if (views.length === 0)
    return ['no schedules (add one with: bizdir schedule set <name> --feed ... --source ... --cron ...)'];
  const lines = table(
    views.map((v) => ({
      name: v.name,
      job: jobLabel(v),
      cron: `${v.cron} (${v.tz})`,
      'next run': v.next_run,
      'last run': lastRunText(v),
      result: v.last_run?.result ?? '-',
      source: v.source || '-',
    })),
  );
  for (const v of views.filter((x) => x.next_period !== null)) {
    const all = v.sources.flatMap((s) => s.next);
    lines.push('', `${v.name}: the next run reads ${v.next_period} (else ${v.fallback_periods.join(', ')}):`);
    lines.push(...sourceLines(all, '  '));
  }
  return lines;
}

/** The search index's files right after its last build (index_build_sizes). */
export interface BuiltView {
  documents: number;
  bytes: number;
  bytes_per_org: number;
  measured_at: string;
}

export function builtView(b: { documents: number; bytes: number; measured_at: Date }): BuiltView {
  const documents = Number(b.documents);
  const bytes = Number(b.bytes);
  return { documents, bytes, bytes_per_org: Math.round(bytes / documents), measured_at: fmt(b.measured_at) };
}

export function showText(v: ScheduleView, check: CheckView | null, built: BuiltView | null = null): string[] {
  const lines = [
    `schedule   ${v.name}`,
    `job        ${jobLabel(v)}`,
    `cron       ${v.cron} (${v.tz})`,
    `next run   ${v.next_run}`,
    `last run   ${v.last_run ? `#${v.last_run.id} ${v.last_run.result} ${v.last_run.at}` : '-'}`,
  ];
  if (v.last_run?.error) lines.push(`           ${v.last_run.error}`);
  if (built) {
    lines.push(
      `last build ${built.bytes_per_org} B/Org on disk (${built.documents} Orgs, ${built.bytes} bytes), ${built.measured_at}`,
    );
  }
  if (v.job !== 'import') return lines;
  lines.push(`sources    ${v.sources.map((s) => s.template).join('\n           ')}`);
  const all = v.sources.flatMap((s) => s.next);
  if (v.next_period !== null) {
    lines.push(`reads      ${v.next_period}, else the newest of ${v.fallback_periods.join(', ')} published:`);
    lines.push(...sourceLines(all, '             '));
  }
  if (check) lines.push(`now        ${check.message}`);
  return lines;
}
