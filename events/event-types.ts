import { badRequest } from '../shared/errors.js';

/** Every event type the feed carries (migration 0025 writes them). */
export const EVENT_TYPES = [
  'org.created',
  'org.updated',
  'org.left_register',
  'location.created',
  'location.updated',
  'location.closed',
  'address.created',
  'address.updated',
  'import.started',
  'import.completed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

const KNOWN: ReadonlySet<string> = new Set(EVENT_TYPES);
const PREFIXES = [...new Set(EVENT_TYPES.map((t) => t.split('.')[0]!))];

/**
 * The exact types a list of filters names: each an exact type or `<kind>.*` (`org.*`). An unknown
 * type or kind is a 400 that lists the known ones, so a typo never silently filters everything out.
 */
export function expandTypes(filters: readonly string[]): EventType[] {
  const out = new Set<EventType>();
  for (const raw of filters) {
    const f = raw.trim();
    if (f.endsWith('.*') && PREFIXES.includes(f.slice(0, -2))) {
      for (const t of EVENT_TYPES) if (t.startsWith(f.slice(0, -1))) out.add(t);
    } else if (KNOWN.has(f)) {
      out.add(f as EventType);
    } else {
      throw badRequest(
        `types: unknown event type "${f.slice(0, 60)}" (known: ${EVENT_TYPES.join(', ')}, or ${PREFIXES.map((p) => `${p}.*`).join(', ')})`,
      );
    }
  }
  return EVENT_TYPES.filter((t) => out.has(t));
}
