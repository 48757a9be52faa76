import type { HoursEntryJson, LinksJson, PhonesJson } from '../shared/database.js';
import { DAY_FIELDS, LINK_FIELDS, type LocationColumns, type LocationField } from './locations.headers.js';
import { isRealDate, parseDayHours, parseSpecialHours } from './locations.hours.js';
import { regionOf } from './locations.regions.js';

/**
 * One sheet row into a Location patch. Partial sheets (FEEDS.md): a field is `undefined` when its
 * column is absent (the stored value stays), `null` when the column is there but empty (cleared).
 * Pure: the loader merges the patch with what is stored.
 */

export interface AddressPatch {
  line1?: string | null;
  line2?: string | null;
  line3?: string | null;
  city?: string | null;
  sublocality?: string | null;
  state?: string | null;
  state_code?: string | null;
  zip?: string | null;
  /** Always present: the country column is required and a row without a value is refused. */
  country_code: string;
}

export interface LocationPatch {
  code: string;
  name: string;
  description?: string | null;
  phones: Partial<Record<keyof PhonesJson, string | null>>;
  links: Partial<Record<keyof LinksJson, string | null>>;
  /** Index = weekday (0 Sunday); `undefined` = column absent, `null` = no hours given. */
  normal: (HoursEntryJson[] | null | undefined)[];
  special?: HoursEntryJson[] | null;
  year_established?: number | null;
  latitude?: number | null;
  longitude?: number | null;
  primary_category?: string | null;
  categories?: string[] | null;
  labels?: string[] | null;
  logo_url?: string | null;
}

/** How the row names its Org (DECISIONS.md); only non-empty cells are kept. */
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

const COUNTRY_ALIASES: Record<string, string> = { UK: 'GB' };

const splitList = (text: string) =>
  text
    .split(/[,;]/)
    .map((p) => p.trim())
    .filter((p) => p !== '');

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

/** An http(s) URL; a bare host such as `example.com/x` gets `https://`. Null when it is no URL. */
export function urlOf(text: string): string | null {
  const t = text.trim();
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

/** Sheet text: trimmed, CRLF line breaks made LF, empty = null. */
const text = (value: string) => {
  const t = value.replace(/\r\n?/g, '\n').trim();
  return t === '' ? null : t;
};

export function normalizeLocationRow(cells: readonly string[], columns: LocationColumns): NormalizedLocation {
  const { index } = columns;
  const label = (field: LocationField) => columns.name[field] ?? field;
  const has = (field: LocationField) => index[field] !== undefined;
  /** The cell of a column: undefined when the sheet lacks the column; a short row reads as empty. */
  const cell = (field: LocationField): string | undefined => {
    const i = index[field];
    return i === undefined ? undefined : (cells[i] ?? '');
  };
  const opt = (field: LocationField) => {
    const v = cell(field);
    return v === undefined ? undefined : text(v);
  };
  const warnings: RowIssue[] = [];

  const code = text(cell('storeCode')!);
  const businessName = text(cell('businessName')!);
  const countryText = (cell('country') ?? '').trim().toUpperCase();
  const country = COUNTRY_ALIASES[countryText] ?? countryText;
  const orgDomain = opt('orgDomain') ?? undefined;
  const companyNumber = opt('companyNumber') ?? undefined;
  const org: OrgRef = {
    businessName: businessName ?? '',
    country,
    ...(orgDomain ? { orgDomain } : {}),
    ...(companyNumber ? { companyNumber } : {}),
  };
  if (code === null)
    return { ok: false, issue: { column: label('storeCode'), reason: 'store code is empty' } };
  const refuse = (field: LocationField, reason: string): NormalizedLocation => ({
    ok: false,
    issue: { column: label(field), reason },
    key: { code, org },
  });
  if (businessName === null) return refuse('businessName', 'business name is empty');
  if (!/^[A-Z]{2}$/.test(country)) {
    return refuse(
      'country',
      country === '' ? 'country is empty' : `"${country}" is not an ISO 3166 country code`,
    );
  }

  const normal: (HoursEntryJson[] | null | undefined)[] = [];
  for (const [day, field] of DAY_FIELDS.entries()) {
    const value = cell(field);
    if (value === undefined) {
      normal.push(undefined);
      continue;
    }
    const parsed = parseDayHours(value, day);
    if (!parsed.ok) return refuse(field, parsed.reason);
    normal.push(parsed.value);
  }
  let special: HoursEntryJson[] | null | undefined;
  const specialCell = cell('specialHours');
  if (specialCell !== undefined) {
    const parsed = parseSpecialHours(specialCell);
    if (!parsed.ok) return refuse('specialHours', parsed.reason);
    special = parsed.value;
  }

  const phones: LocationPatch['phones'] = {};
  if (has('primaryPhone')) phones.default = opt('primaryPhone') ?? null;
  const extraPhones = cell('additionalPhones');
  if (extraPhones !== undefined) {
    // The template allows two additional numbers; the API has one `alt`, so the second goes to `local`.
    const [alt, local, ...rest] = splitList(extraPhones);
    phones.alt = alt ?? null;
    phones.local = local ?? null;
    if (rest.length > 0)
      warnings.push({
        column: label('additionalPhones'),
        reason: 'more than two additional phones; extra ones ignored',
      });
  }

  const links: LocationPatch['links'] = {};
  const link = (field: LocationField, key: keyof LinksJson) => {
    const value = opt(field);
    if (value === undefined) return;
    const url = value === null ? null : urlOf(value);
    if (value !== null && url === null)
      warnings.push({ column: label(field), reason: `"${value}" is not a web address; left empty` });
    links[key] = url;
  };
  link('website', 'website_url');
  for (const [field, key] of Object.entries(LINK_FIELDS) as [keyof typeof LINK_FIELDS, keyof LinksJson][]) {
    link(field, key);
  }

  const location: LocationPatch = { code, name: businessName, phones, links, normal };
  if (special !== undefined) location.special = special;
  const description = opt('description');
  if (description !== undefined) location.description = description;

  const opening = opt('openingDate');
  if (opening !== undefined) {
    location.year_established = opening === null ? null : yearOf(opening);
    if (opening !== null && location.year_established === null) {
      warnings.push({
        column: label('openingDate'),
        reason: `"${opening}" is not a date like 2019-05 or 2019-05-14; left empty`,
      });
    }
  }
  for (const [field, key] of [
    ['latitude', 'latitude'],
    ['longitude', 'longitude'],
  ] as const) {
    const value = opt(field);
    if (value === undefined) continue;
    const n = value === null ? null : Number(value);
    const limit = key === 'latitude' ? 90 : 180;
    const ok = n !== null && Number.isFinite(n) && Math.abs(n) <= limit;
    if (value !== null && !ok)
      warnings.push({ column: label(field), reason: `"${value}" is not a ${key}; left empty` });
    location[key] = ok ? n : null;
  }
  const primaryCategory = opt('primaryCategory');
  if (primaryCategory !== undefined) location.primary_category = primaryCategory;
  for (const [field, key] of [
    ['additionalCategories', 'categories'],
    ['labels', 'labels'],
  ] as const) {
    const value = cell(field);
    if (value === undefined) continue;
    const list = splitList(value);
    location[key] = list.length === 0 ? null : list;
  }
  const logo = opt('logoPhoto');
  if (logo !== undefined) location.logo_url = logo === null ? null : urlOf(logo);

  const address: AddressPatch = { country_code: country };
  const line = (field: LocationField, key: 'line1' | 'line2' | 'zip' | 'city' | 'sublocality') => {
    const value = opt(field);
    if (value !== undefined) address[key] = value;
  };
  line('addressLine1', 'line1');
  line('addressLine2', 'line2');
  line('postalCode', 'zip');
  line('locality', 'city');
  line('subLocality', 'sublocality');
  // The API has three lines; lines 3-5 of the sheet are kept together in line3.
  const rest = (['addressLine3', 'addressLine4', 'addressLine5'] as const).filter(has);
  if (rest.length > 0) {
    const joined = rest.map((f) => opt(f)).filter((v): v is string => typeof v === 'string');
    address.line3 = joined.length === 0 ? null : joined.join(', ');
  }
  const area = cell('administrativeArea');
  if (area !== undefined) Object.assign(address, regionOf(area, country));

  return { ok: true, row: { location, address, org }, warnings };
}
