/**
 * The generated location sheet both location benchmarks use: rows in the real en-US template with
 * real quoting (quoted line breaks and doubled quotes in descriptions), spread over `orgs` Orgs in
 * three countries, with the usual mix of hours forms, phones, links and special hours.
 */
export const HEADER =
  'Store code,Business name,Address line 1,Address line 2,Address line 3,Address line 4,Address line 5,Sub-locality,Locality,Administrative area,Country / Region,Postal code,Latitude,Longitude,Primary phone,Additional phones,Website,Primary category,Additional categories,Sunday hours,Monday hours,Tuesday hours,Wednesday hours,Thursday hours,Friday hours,Saturday hours,Special hours,From the business,Opening date,Logo photo,Cover photo,Other photos,Labels,AdWords location extensions phone';

const WORDS = ['Harbour', 'Quay', 'Mill', 'Glen', 'Oak', 'Bridge', 'Market', 'Crown', 'River', 'Station'];
const TRADES = ['Hardware', 'Books', 'Bakery', 'Tacos', 'Pharmacy', 'Florist', 'Coffee', 'Tailors'];
const CITIES = [
  'Whitby',
  'Leeds',
  'Bristol',
  'Austin',
  'Dublin',
  'Cork',
  'Houston',
  'Inverness',
  'York',
  'Bath',
];
const COUNTRY = ['GB', 'GB', 'US', 'IE'];
const AREA: Record<string, string[]> = { GB: [''], US: ['TX', 'NY', 'CA'], IE: ['Co. Dublin', 'Co. Cork'] };
const HOURS = ['08:30-17:30', '09:00-12:30, 13:30-17:00', '10:00 AM-06:00 PM', 'x', '', '18:00-02:00'];

const q = (v: string) => (/[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);

/** Sheet row `i` (0-based) of a sheet whose rows spread over `orgs` Orgs. */
export function row(i: number, orgs: number): string {
  const org = i % orgs;
  const cc = COUNTRY[org % COUNTRY.length]!;
  const name = `${WORDS[org % 10]} ${WORDS[Math.floor(org / 10) % 10]} ${TRADES[org % 8]} ${org}`;
  const n = Math.floor(i / orgs);
  const city = CITIES[(i * 7) % CITIES.length]!;
  const areas = AREA[cc]!;
  const h = (d: number) => HOURS[(i + d) % HOURS.length]!;
  const cells = [
    `S-${String(n).padStart(4, '0')}`,
    name,
    `${(i % 300) + 1} ${WORDS[i % 10]} Street`,
    i % 3 === 0 ? `Unit ${i % 40}` : '',
    '',
    '',
    '',
    i % 5 === 0 ? 'Old Town' : '',
    city,
    areas[i % areas.length]!,
    cc,
    cc === 'US' ? String(10000 + (i % 89999)) : `AB${i % 99} ${i % 9}CD`,
    (50 + (i % 1000) / 1000).toFixed(4),
    (-1 - (i % 1000) / 1000).toFixed(4),
    `+44 1947 ${String(600000 + (i % 399999))}`,
    i % 4 === 0
      ? `+44 1947 ${String(700000 + (i % 99999))}, +44 7700 900${String(i % 1000).padStart(3, '0')}`
      : '',
    `https://shop${org}.example.com/${city.toLowerCase()}`,
    TRADES[org % 8]!,
    'Gift shop, Delivery service',
    h(0),
    h(1),
    h(2),
    h(3),
    h(4),
    h(5),
    h(6),
    i % 2 === 0 ? '2026-12-24: 09:00-13:00, 2026-12-25: x, 2026-12-26: x' : '',
    `Family-run since ${1950 + (i % 70)}, on the corner of "${WORDS[i % 10]} Street".\nAsk about delivery, gift cards and more.`,
    `${1950 + (i % 70)}-0${(i % 9) + 1}`,
    `https://cdn.example.com/${org}/logo.png`,
    '',
    '',
    'Local, Independent',
    '',
  ];
  return cells.map(q).join(',');
}
