import { hash } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../shared/db.js';
import type { CsvRecord } from '../csv.js';
import {
  normalizeCompanyNumber,
  type RegistrarAddress,
  type RegistrarRecord,
} from './registrar.normalize.js';
import { rawField } from './registrar.parser.js';

/**
 * Unchanged register rows, recognised by their text. Most rows of a monthly register are exactly
 * the rows of last month; splitting, normalizing and hashing them was most of a re-import's
 * JavaScript time. An Org keeps the fingerprint of the row it was last written from (or found
 * unchanged by): the MD5 of the register country, the file's header line and the row's raw text,
 * under a version that changes whenever normalization does. The same fingerprint means the same
 * normalized record, so the row is staged with the Org's own hash and never split.
 */
const VERSION = 'registrar-row-2';

const NO_ADDRESS: RegistrarAddress = Object.freeze({
  line1: null,
  line2: null,
  line3: null,
  city: null,
  state: null,
  zip: null,
  country_code: null,
});

export function rowFingerprint(country: string, headerRaw: string): (raw: string) => string {
  // The header line (about 900 characters) is hashed once: hashing it again with every row tripled
  // the bytes hashed per row (registrar-row-1 did; 5% of a re-import's Node CPU).
  const prefix = `${VERSION}\u001f${country}\u001f${hash('md5', headerRaw, 'base64url')}\u001f`;
  return (raw) => hash('md5', prefix + raw, 'base64url');
}

/**
 * How many times runs of the register of `country` other than `runId` have written to it: the sum of
 * their merged company numbers and of the Orgs their `--full` closed. Every transaction that writes a
 * register's Orgs moves it (a merge chunk adds its numbers to its run's `merged_rows`, `--full`'s
 * closing sets `closed` when the run succeeds), in the same transaction, and nothing takes from it.
 * So an Org read in the same snapshot as this count is still as read as long as the count has not
 * moved: the merge counts a recognised row whose count is still current as unchanged without probing
 * its Org again (registrar.stage.ts nextWinners). Its own run is left out (its own chunks only write
 * company numbers other than those still to merge).
 */
export const registerWritesSql = (country: string, runId: number) => sql<string>`(
  select coalesce(sum(merged_rows + closed), 0)::bigint from import_runs
  where feed = 'registrar' and coalesce(options->>'country', 'GB') = ${country} and id <> ${Math.trunc(runId)})`;

/** By index in `records`: the rows whose company's Org was last written from this very row text. */
export async function recognizeUnchanged(
  db: Db,
  { country, runId }: { country: string; runId: number },
  numberColumn: number,
  fingerprintOf: (raw: string) => string,
  records: readonly CsvRecord[],
): Promise<Map<number, RegistrarRecord>> {
  // A row is hashed only once its number is found with a fingerprint (below): a first import's rows,
  // which find none, are hashed once, where they are normalized (registrar.prepare.ts).
  const keyed: { i: number; number: string }[] = [];
  for (let i = 0; i < records.length; i++) {
    const rec = records[i]!;
    if (rec.error) continue;
    const cell = rawField(rec.raw, numberColumn);
    const number = cell === null ? null : normalizeCompanyNumber(cell.trim());
    if (number !== null) keyed.push({ i, number });
  }
  const found = new Map<number, RegistrarRecord>();
  if (keyed.length === 0) return found;
  // Only Orgs the merge would find unchanged: on the register, with their address.
  // One index probe per number (a lateral join): `registration_number = any(...)` of 5,000 numbers was
  // planned as a sequential scan of every Org up to about half a million of them (50 ms a batch at
  // 200,000 Orgs, growing with the register). `limit 1` (the key is unique) keeps the planner from
  // flattening the lateral subquery back into that hash join.
  // The register's write count comes from the same statement, so from the same snapshot as the Orgs.
  const { rows } = await sql<{
    number: string;
    content_hash: string;
    source_fingerprint: string;
    seen: string;
  }>`
    with g as materialized (select ${registerWritesSql(country, runId)} as seen)
    select o.registration_number as number, o.content_hash, o.source_fingerprint, g.seen
    from g cross join unnest(${keyed.map((k) => k.number)}::text[]) as k(number)
    cross join lateral (
      select registration_number, content_hash, source_fingerprint from orgs
      where registration_country = ${country} and registration_number = k.number
        and source_fingerprint is not null and left_register_on is null
        and registered_address_id is not null limit 1) o`.execute(db);
  if (rows.length === 0) return found;
  const stored = new Map(rows.map((r) => [r.number, r]));
  for (const k of keyed) {
    const org = stored.get(k.number);
    if (org === undefined) continue;
    const fingerprint = fingerprintOf(records[k.i]!.raw);
    if (org.source_fingerprint !== fingerprint) continue;
    found.set(k.i, {
      number: k.number,
      orgHash: org.content_hash,
      fingerprint,
      known: true,
      seen: String(org.seen),
      name: '',
      informal_name: '',
      registration_date: null,
      sic_code: null,
      company_status: null,
      company_category: null,
      // Never read (a recognised row is staged without its fields): one object for all of them.
      address: NO_ADDRESS,
      addressHash: '',
    });
  }
  return found;
}
