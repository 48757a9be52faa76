import { createHash, hash } from 'node:crypto';
import type { LocationColumns, LocationField } from './locations.headers.js';
import type { OrgRef } from './locations.normalize.js';

/**
 * The cells that name a row's Location: its store code and how it names its Org. Read apart from the
 * rest of the row so that a re-import can find the stored Location, see from the row fingerprint
 * that nothing changed, and never parse the other thirty cells (the loader's lazy path).
 */
export interface LocationKey {
  code: string;
  org: OrgRef;
}

const COUNTRY_ALIASES: Record<string, string> = { UK: 'GB' };
/** What a country cell must look like after countryOf (its existence is not checked here). */
export const ISO_SHAPE = /^[A-Z]{2}$/;

/** Sheet text: trimmed, CRLF line breaks made LF, empty = null. */
export function sheetText(value: string): string | null {
  const t = (value.includes('\r') ? value.replace(/\r\n?/g, '\n') : value).trim();
  return t === '' ? null : t;
}

/** `UK` and lower case accepted; anything else is checked by the caller. */
export function countryOf(cell: string | undefined): string {
  const upper = (cell ?? '').trim().toUpperCase();
  return COUNTRY_ALIASES[upper] ?? upper;
}

/**
 * A key reader for one sheet. `key` is null when the row lacks a store code, or its sheet has a
 * business name or country column and the row no value (or no country code) there: such a row is
 * refused, and only the full normalizer says why. A sheet without those columns gives the Org ref
 * empty ones, as the normalizer does.
 */
export function locationKeyReader(columns: LocationColumns) {
  const at = (field: LocationField) => columns.index[field];
  const code = at('storeCode')!;
  const name = at('businessName');
  const country = at('country');
  const orgDomain = at('orgDomain');
  const companyNumber = at('companyNumber');
  return (cells: readonly string[]): LocationKey | null => {
    const storeCode = sheetText(cells[code] ?? '');
    const businessName = name === undefined ? '' : sheetText(cells[name] ?? '');
    const cc = country === undefined ? '' : countryOf(cells[country]);
    if (storeCode === null || businessName === null || (country !== undefined && !ISO_SHAPE.test(cc))) {
      return null;
    }
    const org: OrgRef = { businessName, country: cc };
    const domain = orgDomain === undefined ? null : sheetText(cells[orgDomain] ?? '');
    if (domain) org.orgDomain = domain;
    const number = companyNumber === undefined ? null : sheetText(cells[companyNumber] ?? '');
    if (number) org.companyNumber = number;
    return { code: storeCode, org };
  };
}

/**
 * Bump when normalizing or merging a row would give another result for the same sheet text (a new
 * column rule, a fix in the hours grammar): stored fingerprints then stop matching and every row is
 * merged and compared again once.
 */
const FINGERPRINT_VERSION = 'locations-1';

/**
 * The fingerprint of a row of this sheet (see LocationRecord in locations.match.ts): a hash of the
 * row's text, the sheet's header cells (the same cells mean other things under another header) and
 * FINGERPRINT_VERSION.
 */
export function rowFingerprinter(header: readonly string[]): (raw: string) => string {
  const seed = createHash('md5')
    .update(`${FINGERPRINT_VERSION}\0${header.join('\0')}`)
    .digest('base64url');
  return (raw) => hash('md5', seed + raw, 'base64url');
}
