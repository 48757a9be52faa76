/**
 * The `Administrative area` cell holds a US state code (`TX`), a state or county name (`Texas`,
 * `Co. Dublin`) or nothing. The API has both `state` (a name) and `state_code` (two letters), so a
 * code is kept as the code and given its name where we know it, and a known US name gets its code.
 */
const US_STATES: Record<string, string> = {
  AL: 'Alabama',
  AK: 'Alaska',
  AZ: 'Arizona',
  AR: 'Arkansas',
  CA: 'California',
  CO: 'Colorado',
  CT: 'Connecticut',
  DE: 'Delaware',
  DC: 'District of Columbia',
  FL: 'Florida',
  GA: 'Georgia',
  HI: 'Hawaii',
  ID: 'Idaho',
  IL: 'Illinois',
  IN: 'Indiana',
  IA: 'Iowa',
  KS: 'Kansas',
  KY: 'Kentucky',
  LA: 'Louisiana',
  ME: 'Maine',
  MD: 'Maryland',
  MA: 'Massachusetts',
  MI: 'Michigan',
  MN: 'Minnesota',
  MS: 'Mississippi',
  MO: 'Missouri',
  MT: 'Montana',
  NE: 'Nebraska',
  NV: 'Nevada',
  NH: 'New Hampshire',
  NJ: 'New Jersey',
  NM: 'New Mexico',
  NY: 'New York',
  NC: 'North Carolina',
  ND: 'North Dakota',
  OH: 'Ohio',
  OK: 'Oklahoma',
  OR: 'Oregon',
  PA: 'Pennsylvania',
  RI: 'Rhode Island',
  SC: 'South Carolina',
  SD: 'South Dakota',
  TN: 'Tennessee',
  TX: 'Texas',
  UT: 'Utah',
  VT: 'Vermont',
  VA: 'Virginia',
  WA: 'Washington',
  WV: 'West Virginia',
  WI: 'Wisconsin',
  WY: 'Wyoming',
  AS: 'American Samoa',
  GU: 'Guam',
  MP: 'Northern Mariana Islands',
  PR: 'Puerto Rico',
  VI: 'U.S. Virgin Islands',
};

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
