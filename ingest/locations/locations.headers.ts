import { FeedFormatError } from '../../shared/errors.js';
import type { LinkKey } from '../../shared/record-fields.js';

/**
 * Header matching for the business-profile bulk-upload sheet (docs/feeds.md section 2). Real sheets come
 * from several template generations and locales, so columns are found by name, never by position.
 */

export const DAY_FIELDS = [
  'sundayHours',
  'mondayHours',
  'tuesdayHours',
  'wednesdayHours',
  'thursdayHours',
  'fridayHours',
  'saturdayHours',
] as const;

export const LINK_FIELDS = {
  socialnetUrl: 'socialnet_url',
  photoshareUrl: 'photoshare_url',
  professionalnetUrl: 'professionalnet_url',
  shortvideoUrl: 'shortvideo_url',
  microblogUrl: 'microblog_url',
  videositeUrl: 'videosite_url',
} as const satisfies Record<string, LinkKey>;

/** Column field -> the header names it is known by (already in matching form, see headerKey). */
const ALIASES = {
  storeCode: ['store code', 'shop code'],
  businessName: ['business name'],
  addressLine1: ['address line 1'],
  addressLine2: ['address line 2'],
  addressLine3: ['address line 3'],
  addressLine4: ['address line 4'],
  addressLine5: ['address line 5'],
  subLocality: ['sub-locality', 'sublocality'],
  locality: ['locality'],
  administrativeArea: ['administrative area'],
  country: ['country/region', 'country'],
  postalCode: ['postal code', 'postcode'],
  latitude: ['latitude'],
  longitude: ['longitude'],
  primaryPhone: ['primary phone'],
  additionalPhones: ['additional phones'],
  website: ['website'],
  primaryCategory: ['primary category'],
  additionalCategories: ['additional categories'],
  sundayHours: ['sunday hours'],
  mondayHours: ['monday hours'],
  tuesdayHours: ['tuesday hours'],
  wednesdayHours: ['wednesday hours'],
  thursdayHours: ['thursday hours'],
  fridayHours: ['friday hours'],
  saturdayHours: ['saturday hours'],
  specialHours: ['special hours'],
  description: ['from the business', 'description'],
  openingDate: ['opening date'],
  logoPhoto: ['logo photo'],
  labels: ['labels'],
  orgDomain: ['org domain'],
  companyNumber: ['company number'],
  socialnetUrl: ['socialnet url'],
  photoshareUrl: ['photoshare url'],
  professionalnetUrl: ['professionalnet url'],
  shortvideoUrl: ['shortvideo url'],
  microblogUrl: ['microblog url'],
  videositeUrl: ['videosite url'],
} as const satisfies Record<string, readonly string[]>;

export type LocationField = keyof typeof ALIASES;

/**
 * A sheet needs only its store code column (partial sheets, docs/feeds.md section 2): each row names a
 * Location by it, and an absent column leaves the stored value alone.
 */
const STORE_CODE = 'Store code';

/** Columns that name a row's Org rather than carry Location content. */
const ORG_FIELDS: readonly LocationField[] = ['orgDomain', 'companyNumber'];

/**
 * What a new Location needs besides its store code: a name and a country (the normalizer refuses a
 * row whose cell is empty, and the country gives the Location's stable domain) and an address line 1
 * column (its cell may be empty). A sheet without one of them still updates stored Locations.
 */
const NEW_LOCATION: readonly [LocationField, string][] = [
  ['businessName', 'Business name'],
  ['addressLine1', 'Address line 1'],
  ['country', 'Country / Region'],
];

/** Field -> column index, and the header text as the sheet spells it (for reject rows). */
export interface LocationColumns {
  readonly index: Partial<Record<LocationField, number>>;
  readonly name: Partial<Record<LocationField, string>>;
}

/** Trim, case-fold, collapse runs of white space, and drop spaces around `/` (`Country / Region`). */
export function headerKey(header: string): string {
  return header
    .replace(/^\uFEFF/, '')
    .trim()
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/ ?\/ ?/g, '/');
}

const BY_KEY = new Map<string, LocationField>(
  (Object.entries(ALIASES) as [LocationField, readonly string[]][]).flatMap(([field, names]) =>
    names.map((n) => [n, field] as const),
  ),
);

/**
 * Maps a header row to fields. Unknown columns (photos, `Amenities: ...` attributes, AdWords phone)
 * are ignored. When a sheet repeats a column, the first one wins: later copies are usually stray
 * exports of the same value. Throws FeedFormatError for a sheet without a store code column, or with
 * no location column besides it (and the Org columns): that is no location sheet.
 */
export function matchLocationHeaders(headers: readonly string[]): LocationColumns {
  const index: Partial<Record<LocationField, number>> = {};
  const name: Partial<Record<LocationField, string>> = {};
  headers.forEach((header, i) => {
    const field = BY_KEY.get(headerKey(header));
    if (field === undefined || index[field] !== undefined) return;
    index[field] = i;
    name[field] = header.replace(/^\uFEFF/, '').trim();
  });
  if (index.storeCode === undefined) {
    throw new FeedFormatError(`Not a location sheet: missing required column ${STORE_CODE}`);
  }
  const fields = Object.keys(index) as LocationField[];
  if (!fields.some((f) => f !== 'storeCode' && !ORG_FIELDS.includes(f))) {
    throw new FeedFormatError(
      `Not a location sheet: no location column besides ${name.storeCode ?? STORE_CODE} (such as Business name, Address line 1, Primary phone)`,
    );
  }
  return { index, name };
}

/** `a`, `a and b`, `a, b and c`. */
const listed = (items: readonly string[]) =>
  items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;

/**
 * Null when rows of this sheet can create Locations; otherwise the reason a row naming a store code
 * that has no Location is refused (the sheet lacks a column a new Location needs, see NEW_LOCATION).
 */
export function newLocationGap(columns: LocationColumns): string | null {
  const missing = NEW_LOCATION.filter(([field]) => columns.index[field] === undefined).map(
    ([, label]) => label,
  );
  if (missing.length === 0) return null;
  const needs = listed(NEW_LOCATION.map(([, label]) => label));
  const column = missing.length > 1 ? 'columns' : 'column';
  return `no Location has this store code, and a new one needs ${needs}: the sheet has no ${listed(missing)} ${column}`;
}

/**
 * A row names its Org by an `Org domain` or `Company number` cell, else by `--org`, else by its
 * business name and country (docs/feeds.md). A sheet with none of these can place no row: it fails
 * the run before any row is read, as an unreadable sheet does.
 */
export function checkOrgNaming(columns: LocationColumns, hasOrgOption: boolean): void {
  const has = (field: LocationField) => columns.index[field] !== undefined;
  if (hasOrgOption || ORG_FIELDS.some(has) || (has('businessName') && has('country'))) return;
  throw new FeedFormatError(
    'This sheet names no Org: give --org, or add an Org domain or Company number column, or Business name and Country / Region',
  );
}
