import type { AddressFields, HoursEntryJson, LinksJson } from '../../shared/tables.js';
import { DAY_FIELDS, LINK_FIELDS, type LocationColumns, type LocationField } from './locations.headers.js';
import { HoursCache, isRealDate, splitList } from './locations.hours.js';
import { countryOf, ISO_SHAPE, sheetText as text } from './locations.key.js';
import type { Links, Phones, StoredLocation } from './locations.records.js';
import { regionOf } from './locations.regions.js';

/**
 * One sheet row into a Location patch. Partial sheets (docs/feeds.md section 2): a field is `undefined` when its
 * column is absent (the stored value stays), `null` when the column is there but empty (cleared).
 * Pure: the loader merges the patch with what is stored.
 */

/**
 * The address fields the sheet has. A row of a sheet with a country column always has a country (a
 * row without a value is refused). `area`: the Administrative area cell of a sheet without a country
 * column, read (regionOf) with the stored Location's country when merged.
 */
export type AddressPatch = Partial<AddressFields> & { area?: string };

/** The nested parts: phones and links as far as the sheet has their columns, hours by weekday. */
interface PatchParts {
  code: string;
  /** Absent (the stored name stays) only in a sheet without a Business name column. */
  name?: string;
  phones: Partial<Phones>;
  links: Partial<Links>;
  /**
   * Index = weekday (0 Sunday); `undefined` = column absent, `null` = no hours given. The entry
   * arrays (here and in `special`) are frozen and shared by every row with the same cell text.
   */
  normal: (HoursEntryJson[] | null | undefined)[];
  special?: HoursEntryJson[] | null;
}

/** A row's Location: the nested parts, and the other content fields (record-fields.ts) as far as the sheet has them. */
export type LocationPatch = PatchParts & Omit<StoredLocation, 'name' | 'phones' | 'hours' | 'links'>;

/**
 * How the row names its Org (docs/decisions.md, Records from the feeds); only non-empty cells are kept.
 * `businessName` and `country` are empty when the sheet lacks their column.
 */
export interface OrgRef {
  orgDomain?: string;
  companyNumber?: string;
  businessName: string;
  country: string;
}

export interface RowIssue {
  column: string | null;
  reason: string;
}

export interface LocationRow {
  location: LocationPatch;
  address: AddressPatch;
  org: OrgRef;
}

export type NormalizedLocation =
  | { ok: true; row: LocationRow; warnings: RowIssue[] }
  /** `key` is set when the row still names its Location, so a `--full` run does not close it. */
  | { ok: false; issue: RowIssue; key?: { code: string; org: OrgRef } };

/** `YYYY-MM-DD`, `YYYY-MM` or `YYYY` into a year; null for anything else or an impossible date. */
export function yearOf(text: string): number | null {
  const m = /^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?$/.exec(text.trim());
  if (!m) return null;
  const y = Number(m[1]);
  if (y < 1000 || y > 2100) return null;
  if (m[2] !== undefined && (Number(m[2]) < 1 || Number(m[2]) > 12)) return null;
  if (m[3] !== undefined && !isRealDate(y, Number(m[2]), Number(m[3]))) return null;
  return y;
}

/**
 * Both are keys of btree indexes (a Location by Org and store code; an Org without a register entry
 * by lower-case name), whose entries Postgres caps near 2,700 bytes: a longer value would fail the
 * whole batch. The bounds leave room for 4-byte characters and sit far above real sheets' values.
 */
const MAX_STORE_CODE = 200;
const MAX_BUSINESS_NAME = 500;

const PLAIN_URL = /^https?:\/\/[a-z0-9-]+(\.[a-z0-9-]+)+(:\d+)?([/?#][^\s]*)?$/i;

/** An http(s) URL; a bare host such as `example.com/x` gets `https://`. Null when it is no URL. */
export function urlOf(text: string): string | null {
  const t = text.trim();
  // The usual cell is a plain http(s) address: take it without the cost of a URL parse.
  if (PLAIN_URL.test(t)) return t;
  const withScheme = /^[a-z][a-z0-9+.-]*:/i.test(t) ? t : `https://${t}`;
  try {
    const url = new URL(withScheme);
    if ((url.protocol === 'http:' || url.protocol === 'https:') && url.hostname.includes('.'))
      return withScheme;
  } catch {
    // not a URL: reported by the caller
  }
  return null;
}

const LAT_LONG = [
  ['latitude', 'latitude', 90],
  ['longitude', 'longitude', 180],
] as const;
const LISTS = [
  ['additionalCategories', 'categories'],
  ['labels', 'labels'],
] as const;
const LINK_COLUMNS: readonly (readonly [LocationField, keyof LinksJson])[] = [
  ['website', 'website_url'],
  ...(Object.entries(LINK_FIELDS) as [keyof typeof LINK_FIELDS, keyof LinksJson][]),
];
const ADDRESS_COLUMNS = [
  ['addressLine1', 'line1'],
  ['addressLine2', 'line2'],
  ['postalCode', 'zip'],
  ['locality', 'city'],
  ['subLocality', 'sublocality'],
] as const;
const EXTRA_LINES = ['addressLine3', 'addressLine4', 'addressLine5'] as const;

/**
 * Reads the cells of one row at a time. A class, not closures made per row: this runs for every row
 * of sheets with millions of them, and per-row closures were a measurable share of the import.
 */
class RowReader {
  cells: readonly string[] = [];
  warnings: RowIssue[] = [];
  /** Hours cells repeat across a sheet's rows: each distinct text is parsed once per sheet. */
  readonly hours = new HoursCache();
  constructor(readonly columns: LocationColumns) {}

  label(field: LocationField): string {
    return this.columns.name[field] ?? field;
  }
  has(field: LocationField): boolean {
    return this.columns.index[field] !== undefined;
  }
  /** The cell of a column: undefined when the sheet lacks the column; a short row reads as empty. */
  cell(field: LocationField): string | undefined {
    const i = this.columns.index[field];
    return i === undefined ? undefined : (this.cells[i] ?? '');
  }
  /** Like cell, trimmed, with empty as null. */
  opt(field: LocationField): string | null | undefined {
    const v = this.cell(field);
    return v === undefined ? undefined : text(v);
  }
  warn(field: LocationField, reason: string): void {
    this.warnings.push({ column: this.label(field), reason });
  }
}

/** A row refused for its content that still names its Location (see NormalizedLocation). */
function refuse(
  r: RowReader,
  field: LocationField,
  reason: string,
  code: string,
  org: OrgRef,
): NormalizedLocation {
  return { ok: false, issue: { column: r.label(field), reason }, key: { code, org } };
}

function readPhones(r: RowReader): LocationPatch['phones'] {
  const phones: LocationPatch['phones'] = {};
  if (r.has('primaryPhone')) phones.default = r.opt('primaryPhone') ?? null;
  const extra = r.cell('additionalPhones');
  if (extra !== undefined) {
    // The template allows two additional numbers; the API has one `alt`, so the second goes to `local`.
    const [alt, local, ...rest] = splitList(extra);
    phones.alt = alt ?? null;
    phones.local = local ?? null;
    if (rest.length > 0) r.warn('additionalPhones', 'more than two additional phones; extra ones ignored');
  }
  return phones;
}

function readLinks(r: RowReader): LocationPatch['links'] {
  const links: LocationPatch['links'] = {};
  for (const [field, key] of LINK_COLUMNS) {
    const value = r.opt(field);
    if (value === undefined) continue;
    const url = value === null ? null : urlOf(value);
    if (value !== null && url === null) r.warn(field, `"${value}" is not a web address; left empty`);
    links[key] = url;
  }
  return links;
}

/** The optional Location fields; only those whose column the sheet has are set. */
function readDetails(r: RowReader, location: LocationPatch): void {
  const description = r.opt('description');
  if (description !== undefined) location.description = description;
  const opening = r.opt('openingDate');
  if (opening !== undefined) {
    location.year_established = opening === null ? null : yearOf(opening);
    if (opening !== null && location.year_established === null) {
      r.warn('openingDate', `"${opening}" is not a date like 2019-05 or 2019-05-14; left empty`);
    }
  }
  for (const [field, key, limit] of LAT_LONG) {
    const value = r.opt(field);
    if (value === undefined) continue;
    const n = value === null ? null : Number(value);
    const ok = n !== null && Number.isFinite(n) && Math.abs(n) <= limit;
    if (value !== null && !ok) r.warn(field, `"${value}" is not a ${key}; left empty`);
    location[key] = ok ? n : null;
  }
  const primaryCategory = r.opt('primaryCategory');
  if (primaryCategory !== undefined) location.primary_category = primaryCategory;
  for (const [field, key] of LISTS) {
    const value = r.cell(field);
    if (value === undefined) continue;
    const list = splitList(value);
    location[key] = list.length === 0 ? null : list;
  }
  const logo = r.opt('logoPhoto');
  if (logo !== undefined) location.logo_url = logo === null ? null : urlOf(logo);
}

function readAddress(r: RowReader, country: string | undefined): AddressPatch {
  const address: AddressPatch = {};
  if (country !== undefined) address.country_code = country;
  for (const [field, key] of ADDRESS_COLUMNS) {
    const value = r.opt(field);
    if (value !== undefined) address[key] = value;
  }
  // The API has three lines; lines 3-5 of the sheet are kept together in line3.
  let rest: string[] | undefined;
  for (const field of EXTRA_LINES) {
    const value = r.opt(field);
    if (value === undefined) continue;
    rest ??= [];
    if (value !== null) rest.push(value);
  }
  if (rest !== undefined) address.line3 = rest.length === 0 ? null : rest.join(', ');
  const area = r.cell('administrativeArea');
  if (area !== undefined && country === undefined) address.area = area;
  else if (area !== undefined) {
    const region = regionOf(area, country!);
    address.state = region.state;
    address.state_code = region.state_code;
  }
  return address;
}

/**
 * A partial sheet may lack the Business name and country columns (docs/feeds.md section 2): the row
 * then updates a stored Location only (the loader refuses it otherwise), which keeps its name and
 * country. A column that is there still needs a value in every row.
 */
function readRow(r: RowReader): NormalizedLocation {
  const code = text(r.cell('storeCode')!);
  const nameCell = r.cell('businessName');
  const businessName = nameCell === undefined ? undefined : text(nameCell);
  const countryCell = r.cell('country');
  const country = countryCell === undefined ? undefined : countryOf(countryCell);
  const org: OrgRef = { businessName: businessName ?? '', country: country ?? '' };
  const orgDomain = r.opt('orgDomain');
  if (orgDomain) org.orgDomain = orgDomain;
  const companyNumber = r.opt('companyNumber');
  if (companyNumber) org.companyNumber = companyNumber;
  if (code === null)
    return { ok: false, issue: { column: r.label('storeCode'), reason: 'store code is empty' } };
  if (code.length > MAX_STORE_CODE) {
    const reason = `store code is longer than ${MAX_STORE_CODE} characters`;
    return { ok: false, issue: { column: r.label('storeCode'), reason } };
  }
  if (businessName === null) return refuse(r, 'businessName', 'business name is empty', code, org);
  if (businessName !== undefined && businessName.length > MAX_BUSINESS_NAME) {
    return refuse(
      r,
      'businessName',
      `business name is longer than ${MAX_BUSINESS_NAME} characters`,
      code,
      org,
    );
  }
  if (country !== undefined && !ISO_SHAPE.test(country)) {
    const reason = country === '' ? 'country is empty' : `"${country}" is not an ISO 3166 country code`;
    return refuse(r, 'country', reason, code, org);
  }

  const normal: (HoursEntryJson[] | null | undefined)[] = [];
  for (let day = 0; day < 7; day++) {
    const field = DAY_FIELDS[day]!;
    const value = r.cell(field);
    if (value === undefined) {
      normal.push(undefined);
      continue;
    }
    const parsed = r.hours.day(value, day);
    if (!parsed.ok) return refuse(r, field, parsed.reason, code, org);
    normal.push(parsed.value);
  }
  let special: HoursEntryJson[] | null | undefined;
  const specialCell = r.cell('specialHours');
  if (specialCell !== undefined) {
    const parsed = r.hours.specialHours(specialCell);
    if (!parsed.ok) return refuse(r, 'specialHours', parsed.reason, code, org);
    special = parsed.value;
  }
  const location: LocationPatch = {
    code,
    phones: readPhones(r),
    links: readLinks(r),
    normal,
  };
  if (businessName !== undefined) location.name = businessName;
  if (special !== undefined) location.special = special;
  readDetails(r, location);
  return { ok: true, row: { location, address: readAddress(r, country), org }, warnings: r.warnings };
}

/** A row normalizer for one sheet (its header matched once). */
export function locationRowNormalizer(
  columns: LocationColumns,
): (cells: readonly string[]) => NormalizedLocation {
  const reader = new RowReader(columns);
  return (cells) => {
    reader.cells = cells;
    reader.warnings = [];
    return readRow(reader);
  };
}

export function normalizeLocationRow(cells: readonly string[], columns: LocationColumns): NormalizedLocation {
  return locationRowNormalizer(columns)(cells);
}
