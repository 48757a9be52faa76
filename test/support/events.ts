import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { expect } from 'vitest';
import { type EventFilter, type FeedEvent, readEvents } from '../../events/feed.read-model.js';
import type { Db } from '../../shared/db.js';
import { addressDomain, bizdirUid, locationDomain, orgDomain } from '../../shared/domains.js';
import { SUFFIX } from './api.js';

/** Every visible event, read through the real read model one page after another. */
export async function feedEvents(
  db: Db,
  filter: EventFilter = {},
  after: string | null = null,
): Promise<FeedEvent[]> {
  const out: FeedEvent[] = [];
  let cursor = after;
  for (;;) {
    const page = await readEvents(db, cursor, 1_000, filter, { domainSuffix: SUFFIX });
    out.push(...page.events);
    cursor = page.next_cursor;
    if (!page.has_more) return out;
  }
}

/** The events after `after` (a cursor, or null for all), without import.* brackets. */
export async function recordEvents(db: Db, after: string | null = null): Promise<FeedEvent[]> {
  return (await feedEvents(db, {}, after)).filter((e) => !e.type.startsWith('import.'));
}

/** The id of the last visible event (null: none): a mark to read the next step's events after. */
export async function lastEventId(db: Db): Promise<string | null> {
  const events = await feedEvents(db);
  return events.at(-1)?.id ?? null;
}

/** Each record's current version, by stable domain (Orgs, Locations, Addresses). */
export async function currentVersions(db: Db): Promise<Map<string, number>> {
  const { rows: orgs } = await sql<{ id: number; domain_cc: string; version_number: number }>`
    select id, domain_cc, version_number from orgs`.execute(db);
  const { rows: locations } = await sql<{ uid: string; domain_cc: string; version_number: number }>`
    select uid, domain_cc, version_number from locations`.execute(db);
  const { rows: addresses } = await sql<{ id: number; domain_cc: string; version_number: number }>`
    select id, domain_cc, version_number from addresses`.execute(db);
  return new Map([
    ...orgs.map((o) => [orgDomain(bizdirUid(o.id), o.domain_cc, SUFFIX), o.version_number] as const),
    ...locations.map((l) => [locationDomain(l.uid, l.domain_cc, SUFFIX), l.version_number] as const),
    ...addresses.map((a) => [addressDomain(bizdirUid(a.id), a.domain_cc, SUFFIX), a.version_number] as const),
  ]);
}

/**
 * The feed as a consumer keeping copies checks it: every record's events, in feed order, carry the
 * versions 1, 2, 3, ... (a `*.created` at 1, then one event per bump), none twice and none missing,
 * up to the version the record has now; and every record has its events.
 */
export async function expectUnbrokenVersions(db: Db): Promise<void> {
  const byDomain = new Map<string, { type: string; version: number }[]>();
  for (const e of await recordEvents(db)) {
    const domain = e.data.domain as string;
    byDomain.set(domain, [
      ...(byDomain.get(domain) ?? []),
      { type: e.type, version: e.data.version_number as number },
    ]);
  }
  const current = await currentVersions(db);
  const problems: string[] = [];
  for (const [domain, version] of current) {
    const seen = byDomain.get(domain) ?? [];
    const versions = seen.map((s) => s.version);
    const wanted = Array.from({ length: version }, (_, i) => i + 1);
    if (versions.join() !== wanted.join())
      problems.push(`${domain}: events carry ${versions.join()}, record is at ${version}`);
    else if (!seen[0]?.type.endsWith('.created')) problems.push(`${domain}: first event is ${seen[0]?.type}`);
  }
  for (const domain of byDomain.keys())
    if (!current.has(domain)) problems.push(`${domain}: events of no record`);
  expect(problems).toEqual([]);
}

/** Writes `text` to a new file of its own; returns its path. */
export function tempFile(name: string, text: string): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'bizdir-events-')), name);
  writeFileSync(file, text);
  return file;
}
