import type { Transaction } from 'kysely';
import { slugify } from '../../shared/domains.js';
import type { Database } from '../../shared/tables.js';
import { keepFormerSlugs, type SlugRequest } from '../public-domains.js';
import type { ExistingLocation, Loaded, MergedAhead, MergedRow, Pending } from './locations.match.js';
import type { LocationRow } from './locations.normalize.js';
import type { OrgInfo } from './locations.orgs.js';
import { contentHash, encodeLocation, mergeAddress, mergeLocation } from './locations.records.js';
import {
  type AddressWrite,
  insertAddresses,
  insertLocations,
  type LocationWrite,
  type NewAddress,
  type NewLocation,
  newLocationCopy,
  takeIds,
  updateAddresses,
  updateLocations,
} from './locations.repository.js';

/**
 * Writing a batch's merged rows: which are new, changed or unchanged (planWrites, pure), then one
 * statement per kind of write. A changed row bumps its Location (and its Address, if that changed)
 * by exactly one, however often the run touches it; an unchanged row is not written.
 */

type Trx = Transaction<Database>;

export interface Write {
  p: Pending;
  loc: LocationWrite;
  addr: AddressWrite;
}

/** A new Location and its Address: keys around COPY text built from the merged row (newLocationCopy). */
export interface Insert {
  p: Pending;
  loc: NewLocation;
  addr: NewAddress;
  /** For the label (slugBase). */
  name: string;
  city: string | null;
  slugGuess?: MergedAhead['slugGuess'];
}

export interface Update extends Write {
  e: ExistingLocation;
  addressChanged: boolean;
}

export interface WritePlan {
  inserts: Insert[];
  updates: Update[];
  /** Unchanged Locations met through another fingerprint: only that is stored (storeFingerprints). */
  refreshed: { id: number; fingerprint: string }[];
  /** Unchanged rows, not counting repeats of a key an earlier batch of the run met. */
  unchanged: number;
}

/** A row merged with its stored Location (if any: none for a new one, or one merged ahead), and hashed. */
export function mergeRow(row: LocationRow, e: ExistingLocation | undefined): MergedRow {
  const content = mergeLocation(row.location, e?.stored);
  const address = mergeAddress(row.address, e?.storedAddress);
  const { encoded, hash } = encodeLocation(content);
  return { content, encoded, hash, address, addrHash: contentHash(address) };
}

/**
 * The read-ahead's merge of a row with no stored Location (see MergedAhead): what a new Location
 * needs, with the public label's base guessed for a by-name Org (named as the row's business name).
 */
export function mergeAhead(row: LocationRow, fingerprint: string | null): MergedAhead {
  const m = mergeRow(row, undefined);
  const { name, countryCode } = newLocationParts(m);
  const orgName = row.org.businessName;
  return {
    hash: m.hash,
    addrHash: m.addrHash,
    copy: newLocationCopy(m, fingerprint),
    name,
    city: m.address.city,
    countryCode,
    slugGuess: { orgName, base: slugBaseOf(orgName, m.address.city, name) },
  };
}

/**
 * The name and country of a row that creates a Location. Rows of a sheet without a Business name or
 * country column create none (LocationsLoader refuses them and does not merge them ahead), and a row
 * of a sheet with them has both (the normalizer refuses an empty cell).
 */
function newLocationParts(m: MergedRow): { name: string; countryCode: string } {
  const { name } = m.content;
  const countryCode = m.address.country_code;
  if (name === null || countryCode === null) throw new Error('a new Location needs a name and a country');
  return { name, countryCode };
}

/** What to do with one merged row, given its stored Location (if any). */
export type RowChange = 'insert' | 'update' | 'unchanged';

/**
 * The change decision: a row with no stored Location is new; one whose content hash and Address
 * are the same, that is open and was not moved by this batch, is unchanged; anything else is an update.
 * (A Location moved to this row's Org is written even if its content is the same.)
 */
export function changeOf(
  m: Pick<MergedRow, 'hash' | 'addrHash'>,
  e: ExistingLocation | undefined,
  moved: ReadonlyMap<number, number>,
): { change: RowChange; addressChanged: boolean } {
  if (e === undefined) return { change: 'insert', addressChanged: true };
  const addressChanged = e.address_id === null || e.address_hash !== m.addrHash;
  const same = e.content_hash === m.hash && !addressChanged && e.closed_date === null && !moved.has(e.id);
  return { change: same ? 'unchanged' : 'update', addressChanged };
}

/**
 * Sorts the rows to merge into inserts, updates and unchanged ones. `merge` is called for a row
 * that was not merged ahead. Ids and slugs of new rows are filled in when they are written.
 */
export function planWrites(
  toMerge: readonly Loaded[],
  stored: ReadonlyMap<string, ExistingLocation>,
  moved: ReadonlyMap<number, number>,
  repeats: ReadonlySet<Pending>,
  runId: number,
  merge: (p: Loaded, e: ExistingLocation | undefined) => MergedRow,
): WritePlan {
  const plan: WritePlan = { inserts: [], updates: [], refreshed: [], unchanged: 0 };
  for (const p of toMerge) {
    const e = stored.get(p.key);
    const { fingerprint } = p.record;
    const merged: MergedRow | MergedAhead = p.record.merged ?? merge(p, e);
    const { change, addressChanged } = changeOf(merged, e, moved);
    if (change === 'unchanged') {
      if (!repeats.has(p)) plan.unchanged++;
      if (fingerprint !== null && e!.source_fingerprint !== fingerprint) {
        plan.refreshed.push({ id: e!.id, fingerprint });
      }
      continue;
    }
    if (e === undefined) {
      plan.inserts.push(insertOf(p, 'copy' in merged ? merged : aheadOf(merged, p)));
      continue;
    }
    // Merged ahead, it kept only what a new Location needs: merged again (the same content).
    const full = 'content' in merged ? merged : merge(p, e);
    plan.updates.push({ ...writeOf(p, full, e, runId), e, addressChanged });
  }
  return plan;
}

/** A row merged in the batch, as the read-ahead would have kept it (only its COPY text is new work). */
function aheadOf(m: MergedRow, p: Loaded): MergedAhead {
  const { name, countryCode } = newLocationParts(m);
  const orgName = p.org.informal_name ?? p.org.name;
  return {
    hash: m.hash,
    addrHash: m.addrHash,
    copy: newLocationCopy(m, p.record.fingerprint),
    name,
    city: m.address.city,
    countryCode,
    slugGuess: { orgName, base: slugBaseOf(orgName, m.address.city, name) },
  };
}

function insertOf(p: Loaded, m: MergedAhead): Insert {
  const cc = m.countryCode.toLowerCase();
  return {
    p,
    name: m.name,
    city: m.city,
    slugGuess: m.slugGuess,
    addr: { id: 0, domain_cc: cc, copy: m.copy.address },
    loc: {
      id: 0,
      org_id: p.org.id,
      code: p.code,
      domain_cc: cc,
      public_slug: '',
      address_id: 0,
      position: p.line,
      bump: true,
      copy: m.copy.location,
    },
  };
}

/** A changed Location (new ones go through COPY, insertOf): its domain and keys stay. */
function writeOf(p: Loaded, m: MergedRow, e: ExistingLocation, runId: number): Write {
  const cc = e.domain_cc;
  return {
    p,
    addr: {
      id: e.address_id ?? 0,
      domain_cc: cc,
      content: m.address,
      hash: m.addrHash,
    },
    loc: {
      id: e.id,
      org_id: p.org.id,
      code: p.code,
      domain_cc: cc,
      public_slug: e.public_slug,
      address_id: e.address_id ?? 0,
      position: p.line,
      content: m.content,
      encoded: m.encoded,
      hash: m.hash,
      fingerprint: p.record.fingerprint,
      // A Location the run already wrote (a repeated key) is not bumped a second time.
      bump: e.last_run_id !== runId,
    },
  };
}

/** Whether a slug is `base` or `base-N`: the Location keeps it while its name parts stay. */
export const isOwnSlug = (slug: string, base: string) =>
  slug === base || (slug.startsWith(`${base}-`) && /^\d+$/.test(slug.slice(base.length + 1)));

/** Public Location domain label: the Org's informal name (or name) and the Location's city (or name). */
export const slugBase = (org: OrgInfo, city: string | null, name: string | null) =>
  slugBaseOf(org.informal_name ?? org.name, city, name);

/** slugBase for an Org called `orgName` (its informal name, or its name; a stored Location may have none). */
export const slugBaseOf = (orgName: string, city: string | null, name: string | null) =>
  slugify(`${orgName} ${city ?? name ?? ''}`, 'location');

/** A new Location's label base: the one the read-ahead guessed (MergedAhead.slugGuess) when its Org has that name. */
function insertSlugBase(x: Insert): string {
  const orgName = x.p.org.informal_name ?? x.p.org.name;
  const guess = x.slugGuess;
  return guess !== undefined && guess.orgName === orgName ? guess.base : slugBaseOf(orgName, x.city, x.name);
}

/** Allocates a batch's public labels (LabelBatch, in sheet order across the run's batches). */
export interface LabelAllocator {
  allocate(trx: Trx, requests: readonly SlugRequest[]): Promise<string[]>;
}

/** A changed Location whose name parts changed: it gets a new public label (see assignUpdateKeys). */
export interface Rename {
  u: Update;
  base: string;
}

/**
 * The ids and labels of a batch's new Locations and Addresses, and of its renamed Locations and
 * Locations without an Address (which get their first one). Done before any row is written, and by
 * the batches of a run in sheet order (ids and labels follow the sheet as when batches ran one at a
 * time: the first Location of an Org has its lowest id); `allocate` keeps the labels' order.
 */
export async function assignKeys(
  trx: Trx,
  inserts: readonly Insert[],
  updates: readonly Update[],
  labels: LabelAllocator,
): Promise<Rename[]> {
  // A Location whose name parts changed (new city, renamed Org) gets a new public label; the old
  // one stays in location_public_domains and keeps resolving to it.
  const renamed = updates
    .map((u) => ({ u, base: slugBase(u.p.org, u.addr.content.city, u.loc.content.name) }))
    .filter(({ u, base }) => !isOwnSlug(u.e.public_slug, base));
  // Every Location has an Address; one without (written by hand, say) gets its first one now.
  const homeless = updates.filter((u) => u.e.address_id === null);
  const { locations: ids, addresses: addressIds } = await takeIds(
    trx,
    inserts.length,
    inserts.length + homeless.length,
  );
  const slugs = await labels.allocate(
    trx,
    inserts.map((x) => ({ base: insertSlugBase(x) })),
  );
  inserts.forEach((x, i) => {
    x.addr.id = addressIds[i]!;
    x.loc.id = ids[i]!;
    x.loc.address_id = addressIds[i]!;
    x.loc.public_slug = slugs[i]!;
  });
  homeless.forEach((u, i) => {
    u.addr.id = addressIds[inserts.length + i]!;
    u.loc.address_id = addressIds[inserts.length + i]!;
  });
  const newSlugs = await labels.allocate(
    trx,
    renamed.map(({ u, base }) => ({ base, ownerId: u.e.id })),
  );
  renamed.forEach(({ u }, i) => {
    u.loc.public_slug = newSlugs[i]!;
  });
  return renamed;
}

/** New Locations with their Addresses and labels (ids and labels assigned: assignKeys). */
export async function writeInserts(trx: Trx, inserts: readonly Insert[], runId: number): Promise<void> {
  if (inserts.length === 0) return;
  await insertAddresses(
    trx,
    inserts.map((x) => x.addr),
  );
  await insertLocations(
    trx,
    inserts.map((x) => x.loc),
    runId,
  );
}

/** Changed Locations (and their Addresses), and the labels of the renamed ones (assignKeys). */
export async function writeUpdates(
  trx: Trx,
  updates: readonly Update[],
  renamed: readonly Rename[],
  runId: number,
): Promise<void> {
  if (updates.length === 0) return;
  await insertAddresses(
    trx,
    updates.filter((u) => u.e.address_id === null).map((u) => u.addr),
  );
  await updateAddresses(
    trx,
    updates
      .filter((u) => u.addressChanged && u.e.address_id !== null)
      .map((u) => ({ ...u.addr, bump: u.loc.bump })),
  );
  // A renamed Location's label so far stays its alias.
  await keepFormerSlugs(
    trx,
    'location',
    renamed.map(({ u }) => ({ ownerId: u.e.id, slug: u.loc.public_slug })),
  );
  await updateLocations(
    trx,
    updates.map((u) => u.loc),
    runId,
  );
}
