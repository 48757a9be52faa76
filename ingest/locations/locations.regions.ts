import { US_STATES } from '../../shared/us-states.js';

/**
 * The `Administrative area` cell holds a US state code (`TX`), a state or county name (`Texas`,
 * `Co. Dublin`) or nothing. The API has both `state` (a name) and `state_code` (two letters), so a
 * code is kept as the code and given its name where we know it, and a known US name gets its code.
 */

const US_CODES = new Map(Object.entries(US_STATES).map(([code, name]) => [name.toLowerCase(), code]));

export interface Region {
  state: string | null;
  state_code: string | null;
}

/**
 * Splits an administrative area into a name and a code. Outside the US a two-letter value is taken
 * as a code (Canadian provinces, Australian states written short) and kept as the name too, since
 * we hold no name list for it; longer values (`Co. Dublin`, `Ross-shire`) are names with no code.
 */
export function regionOf(area: string, countryCode: string): Region {
  const value = area.trim().replace(/\s+/g, ' ');
  if (value === '') return { state: null, state_code: null };
  if (countryCode === 'US') {
    const upper = value.toUpperCase();
    const name = US_STATES[upper];
    if (name !== undefined) return { state: name, state_code: upper };
    const code = US_CODES.get(value.toLowerCase());
    if (code !== undefined) return { state: US_STATES[code]!, state_code: code };
    return { state: value, state_code: null };
  }
  if (/^[A-Za-z]{2}$/.test(value)) return { state: value.toUpperCase(), state_code: value.toUpperCase() };
  return { state: value, state_code: null };
}
