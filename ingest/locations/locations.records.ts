import { hash as digestOf } from 'node:crypto';
import type { Selectable } from 'kysely';
import {
  ADDRESS_FIELDS,
  type AddressField,
  LINK_KEYS,
  type LinkKey,
  type LocationContentField,
  PHONE_KEYS,
  type PhoneKey,
} from '../../shared/record-fields.js';
import type { AddressFields, HoursEntryJson, HoursJson, LocationsTable } from '../../shared/tables.js';
import { DAY_FIELDS, LINK_FIELDS, type LocationColumns, type LocationField } from './locations.headers.js';
import type { AddressPatch, LocationPatch } from './locations.normalize.js';
import { regionOf } from './locations.regions.js';

/**
 * A Location patch merged with what is stored, in one canonical shape, and its content hash. The
 * hash decides "changed or not": it is computed from fresh objects with a fixed key order, so a
 * value read back from jsonb (which reorders keys) hashes the same as the one that was written.
 */

export type Phones = Record<PhoneKey, string | null>;
export type Links = Record<LinkKey, string | null>;
export interface Hours {
  normal: HoursEntryJson[] | null;
  special: HoursEntryJson[] | null;
  message: string | null;
  special_message: string | null;
}

/** The nested parts in their canonical (full) shapes, and the name (null only if stored so). */
interface ContentParts {
  name: string | null;
  phones: Phones;
  hours: Hours;
  links: Links;
}

/** A Location's content (record-fields.ts) merged and canonical: the nested parts whole, the rest as stored. */
export type LocationContent = {
  [K in LocationContentField]: K extends keyof ContentParts ? ContentParts[K] : Selectable<LocationsTable>[K];
};

/** A merged Address. A new Location's always has a country (the loader creates none from a sheet without one). */
export type AddressContent = AddressFields;

/** Stored values, as far as they were read (only columns the sheet does not fully cover are read). */
export type StoredLocation = { -readonly [K in keyof typeof COLUMN_SOURCES]?: Selectable<LocationsTable>[K] };
export type StoredAddress = Partial<AddressContent>;

/** The sheet columns of the links besides Website. */
const LINK_COLUMN_FIELDS = Object.keys(LINK_FIELDS) as (keyof typeof LINK_FIELDS)[];

/** Which stored columns a sheet leaves partly or wholly to the stored value (partial sheets). */
const COLUMN_SOURCES = {
  name: ['businessName'],
  description: ['description'],
  phones: ['primaryPhone', 'additionalPhones'],
  hours: [...DAY_FIELDS, 'specialHours'],
  links: ['website', ...LINK_COLUMN_FIELDS],
  year_established: ['openingDate'],
  latitude: ['latitude'],
  longitude: ['longitude'],
  primary_category: ['primaryCategory'],
  categories: ['additionalCategories'],
  labels: ['labels'],
  logo_url: ['logoPhoto'],
} as const satisfies Record<LocationContentField, readonly LocationField[]>;

const ADDRESS_SOURCES = {
  line1: ['addressLine1'],
  line2: ['addressLine2'],
  line3: ['addressLine3', 'addressLine4', 'addressLine5'],
  city: ['locality'],
  sublocality: ['subLocality'],
  state: ['administrativeArea'],
  state_code: ['administrativeArea'],
  zip: ['postalCode'],
  // Also what a deferred Administrative area is read with (AddressPatch.area).
  country_code: ['country'],
} as const satisfies Record<keyof StoredAddress, readonly LocationField[]>;

const missingAny = (columns: LocationColumns, fields: readonly LocationField[]) =>
  fields.some((f) => columns.index[f] === undefined);

/** The stored columns that must be read to merge rows of this sheet. */
export function columnsToRead(columns: LocationColumns): {
  location: (keyof StoredLocation)[];
  address: (keyof StoredAddress)[];
} {
  const pick = <K extends string>(sources: Record<K, readonly LocationField[]>) =>
    (Object.keys(sources) as K[]).filter((k) => missingAny(columns, sources[k]));
  return { location: pick(COLUMN_SOURCES), address: pick(ADDRESS_SOURCES) };
}

const keep = <T>(patch: T | undefined, stored: T | undefined | null): T | null =>
  patch !== undefined ? patch : (stored ?? null);

/** A stored entry rebuilt with the canonical key order (jsonb hands keys back in its own order). */
function entryOf(e: HoursEntryJson): HoursEntryJson {
  return e.date !== undefined
    ? { date: e.date, open: e.open, open_time: e.open_time, close_time: e.close_time }
    : { day: e.day!, open: e.open, open_time: e.open_time, close_time: e.close_time };
}

/**
 * Weekday entries come out by day, then time: the patch's are built that way by the parser and the
 * stored ones were written that way, so taking days in order needs no sort. Entries from the patch
 * are already canonical and are used as they are (this runs for every row of every import).
 */
function mergeHours(patch: LocationPatch, stored: HoursJson | undefined): Hours {
  const normal: HoursEntryJson[] = [];
  for (let day = 0; day < 7; day++) {
    const given = patch.normal[day];
    if (given === undefined) {
      for (const e of stored?.normal ?? []) if (e.day === day) normal.push(entryOf(e));
    } else if (given !== null) {
      for (const e of given) normal.push(e);
    }
  }
  let special: HoursEntryJson[] | null;
  if (patch.special !== undefined) special = patch.special;
  else special = stored?.special ? stored.special.map(entryOf) : null;
  return {
    normal: normal.length === 0 ? null : normal,
    special: special === null || special.length === 0 ? null : special,
    message: stored?.message ?? null,
    special_message: stored?.special_message ?? null,
  };
}

function mergeKeys<K extends string>(
  keys: readonly K[],
  patch: Partial<Record<K, string | null>>,
  stored: Partial<Record<K, string | null | undefined>> | undefined,
): Record<K, string | null> {
  const out = {} as Record<K, string | null>;
  for (const k of keys) {
    const given: string | null | undefined = patch[k];
    const kept: string | null | undefined = stored?.[k];
    out[k] = given !== undefined ? given : (kept ?? null);
  }
  return out;
}

export function mergeLocation(patch: LocationPatch, stored: StoredLocation | undefined): LocationContent {
  return {
    name: keep(patch.name, stored?.name),
    description: keep(patch.description, stored?.description),
    phones: mergeKeys(PHONE_KEYS, patch.phones, stored?.phones),
    hours: mergeHours(patch, stored?.hours),
    links: mergeKeys(LINK_KEYS, patch.links, stored?.links),
    year_established: keep(patch.year_established, stored?.year_established),
    latitude: keep(patch.latitude, stored?.latitude),
    longitude: keep(patch.longitude, stored?.longitude),
    primary_category: keep(patch.primary_category, stored?.primary_category),
    categories: keep(patch.categories, stored?.categories),
    labels: keep(patch.labels, stored?.labels),
    logo_url: keep(patch.logo_url, stored?.logo_url),
  };
}

/**
 * Field by field in ADDRESS_FIELDS order: the order its content hash is taken in. An Administrative
 * area of a sheet without a country column is read with the stored country (regionOf).
 */
export function mergeAddress(patch: AddressPatch, stored: StoredAddress | undefined): AddressContent {
  const out = {} as Record<AddressField, string | null>;
  for (const f of ADDRESS_FIELDS) out[f] = keep(patch[f], stored?.[f]);
  if (patch.area !== undefined) {
    const region = regionOf(patch.area, out.country_code ?? '');
    out.state = region.state;
    out.state_code = region.state_code;
  }
  return out;
}

/**
 * MD5 of a text, base64url. The one-shot crypto.hash, not createHash: it runs twice per row, and a
 * Hash object per call costs more than hashing the few hundred bytes.
 */
const md5 = (text: string) => digestOf('md5', text, 'base64url');

/** Hash of a canonical value (built by the merge functions above, so key order is fixed). */
export const contentHash = (value: AddressContent) => md5(JSON.stringify(value));

const PG_ARRAY_SPECIAL = /[\\"]/g;

/** A Postgres array literal (`{"a","b \\"c\\""}`) for a text[] cast. */
export function pgTextArray(items: readonly string[] | null): string | null {
  if (items === null) return null;
  let out = '{';
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out += ',';
    out += `"${items[i]!.replace(PG_ARRAY_SPECIAL, '\\$&')}"`;
  }
  return `${out}}`;
}

/**
 * JSON text of hours entries, remembered per entry object. The parser shares one frozen entry among
 * all rows whose cell has the same text (HoursCache), so most rows' dozen entries cost a lookup each
 * instead of a JSON.stringify each. Only frozen entries are remembered: their text cannot go stale.
 */
const entryTexts = new WeakMap<HoursEntryJson, string>();

function entryJson(e: HoursEntryJson): string {
  let text = entryTexts.get(e);
  if (text === undefined) {
    text = JSON.stringify(e);
    if (Object.isFrozen(e)) entryTexts.set(e, text);
  }
  return text;
}

function entriesJson(entries: readonly HoursEntryJson[] | null): string {
  if (entries === null) return 'null';
  let out = '[';
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) out += ',';
    out += entryJson(entries[i]!);
  }
  return `${out}]`;
}

/** Exactly JSON.stringify(hours) for Hours as mergeHours builds them (these four keys, in this order). */
function hoursJson(h: Hours): string {
  return (
    `{"normal":${entriesJson(h.normal)},"special":${entriesJson(h.special)},` +
    `"message":${JSON.stringify(h.message)},"special_message":${JSON.stringify(h.special_message)}}`
  );
}

/** The nested parts of a Location as the text the writer sends (jsonb and text[] casts). */
export interface EncodedLocation {
  phones: string;
  hours: string;
  links: string;
  categories: string | null;
  labels: string | null;
}

/**
 * Encodes a Location's nested parts once and hashes the whole from them: the same strings then go
 * to Postgres, so a written row costs one serialization, not one for the hash and one for the write.
 * JSON text never holds a raw NUL, so NUL separators keep the parts apart.
 */
export function encodeLocation(c: LocationContent): { encoded: EncodedLocation; hash: string } {
  const encoded: EncodedLocation = {
    phones: JSON.stringify(c.phones),
    hours: hoursJson(c.hours),
    links: JSON.stringify(c.links),
    categories: pgTextArray(c.categories),
    labels: pgTextArray(c.labels),
  };
  const scalars = JSON.stringify([
    c.name,
    c.description,
    c.year_established,
    c.latitude,
    c.longitude,
    c.primary_category,
    c.logo_url,
  ]);
  // One string hashed in one call gives the same bytes as the parts fed to one Hash in turn (each
  // part is whole JSON text, so no character is split between parts): stored hashes stay valid.
  const lists = JSON.stringify([c.categories, c.labels]);
  const hash = md5(`${scalars}\0${encoded.phones}\0${encoded.hours}\0${encoded.links}\0${lists}`);
  return { encoded, hash };
}
