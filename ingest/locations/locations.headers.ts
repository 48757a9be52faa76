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

/** The sheet's own name for each required column, used in the error message. */
const REQUIRED: readonly [LocationField, string][] = [
  ['storeCode', 'Store code'],
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
 * exports of the same value. Throws FeedFormatError naming every missing required column.
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
  const missing = REQUIRED.filter(([field]) => index[field] === undefined).map(([, label]) => label);
  if (missing.length > 0) {
    throw new FeedFormatError(
      `Not a location sheet: missing required column${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`,
    );
  }
  return { index, name };
}
