import type { Probe } from './source-fingerprint.js';
import {
  dateIn,
  type PeriodDate,
  periodLabel,
  periodsBefore,
  type SourceTemplates,
} from './source-template.js';

/**
 * Which sources a run of a schedule reads: its templates for the newest period whose sources all
 * exist. A run looks at the period of its firing (in the schedule's time zone), then at most
 * LOOK_BACK periods before it. A period none of whose dated sources exist is not published yet: the
 * run looks further back. A period with some of them and not others is being published, or broken:
 * the run fails and names what is missing, rather than import part of a register (with `--full`,
 * everything in the missing parts would be marked gone) or fall back to an older one unnoticed.
 */
export const LOOK_BACK = 3;

/** Sources are asked about this many at a time. */
const PROBES_AT_ONCE = 8;

export interface ResolvedSource {
  location: string;
  /** The template it comes from. */
  template: string;
}

export type Resolution =
  | {
      kind: 'found';
      /** The period read (null: the templates name no date). */
      period: string | null;
      sources: ResolvedSource[];
      /** Newer periods that were not published (no dated source of theirs exists). */
      notPublished: string[];
      fingerprints: () => Promise<(string | undefined)[]>;
    }
  | { kind: 'incomplete'; period: string | null; sources: ResolvedSource[]; message: string }
  | { kind: 'none'; tried: string[]; message: string };

/** A source could not be asked about (network, HTTP 5xx): worth trying the firing again. */
export class SourcesUnreachableError extends Error {
  override name = 'SourcesUnreachableError';
}

async function probeAll(locations: readonly string[], probe: Probe) {
  const results = new Array<Awaited<ReturnType<Probe>>>(locations.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < locations.length; i = next++) results[i] = await probe(locations[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(PROBES_AT_ONCE, locations.length) }, lane));
  return results;
}

/** The periods a run at `at` looks at, newest first. */
export function candidateDates(templates: SourceTemplates, at: Date, tz: string): PeriodDate[] {
  const today = dateIn(at, tz);
  if (templates.period === null) return [today];
  const period = templates.period;
  return Array.from({ length: LOOK_BACK + 1 }, (_, k) => periodsBefore(today, period, k));
}

/** The sources of `templates` for one date, flat, each with its template and whether it is dated. */
export function sourcesFor(templates: SourceTemplates, date: PeriodDate) {
  return templates
    .expand(date)
    .flatMap((t) => t.sources.map((location) => ({ location, template: t.template, dated: t.dated })));
}

export async function resolveSources(
  templates: SourceTemplates,
  at: Date,
  tz: string,
  probe: Probe,
): Promise<Resolution> {
  const tried: string[] = [];
  let firstMissing = '';
  for (const date of candidateDates(templates, at, tz)) {
    const label = templates.period === null ? null : periodLabel(date, templates.period);
    const all = sourcesFor(templates, date);
    const probes = await probeAll(
      all.map((s) => s.location),
      probe,
    );
    const unreachable = probes.findIndex((p) => p.state === 'unreachable');
    if (unreachable >= 0) {
      const p = probes[unreachable] as { reason: string };
      throw new SourcesUnreachableError(`${all[unreachable]!.location}: ${p.reason}`);
    }
    const sources = all.map(({ location, template }) => ({ location, template }));
    const missing = probes.flatMap((p, i) => (p.state === 'missing' ? [i] : []));
    if (missing.length === 0) {
      return {
        kind: 'found',
        period: label,
        sources,
        notPublished: tried,
        fingerprints: () =>
          Promise.all(probes.map((p) => (p.state === 'found' ? p.fingerprint() : undefined))),
      };
    }
    const datedFound = all.some((s, i) => s.dated && probes[i]!.state === 'found');
    const undatedMissing = missing.some((i) => !all[i]!.dated);
    if (label !== null && !datedFound && !undatedMissing) {
      tried.push(label);
      if (firstMissing === '')
        firstMissing = `${all[0]!.location}: ${(probes[0] as { reason: string }).reason}`;
      continue;
    }
    const named = missing.map((i) => {
      const reason = (probes[i] as { reason: string }).reason;
      return `${all.length > 1 ? `source ${i + 1} of ${all.length}, ` : ''}${all[i]!.location} (${reason})`;
    });
    const what = missing.length === 1 ? 'missing' : `missing (${missing.length})`;
    return {
      kind: 'incomplete',
      period: label,
      sources,
      message: `${label === null ? '' : `${label}: `}${what}: ${named.join('; ')}; nothing was imported`,
    };
  }
  return {
    kind: 'none',
    tried,
    message: `no sources published for ${tried.join(', ')} (${firstMissing}); nothing was imported`,
  };
}
