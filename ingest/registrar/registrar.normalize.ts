import { hash as digest } from 'node:crypto';
import { countryCodeOf } from '../../shared/countries.js';
import type { NormalizedRow, RowIssue } from '../feed-handler.js';
import { columnOf, type RegistrarRow, rawField } from './registrar.parser.js';

/**
 * Pure normalization of one register row (docs/feeds.md section 1, docs/decisions.md "Records from
 * the feeds"). A row without a usable name or number is rejected; a bad optional value becomes null and
 * a warning.
 */
export interface RegistrarAddress {
  line1: string | null;
  line2: string | null;
  line3: string | null;
  city: string | null;
  state: string | null;
  zip: string | null;
  country_code: string | null;
}

export interface RegistrarRecord {
  number: string;
  name: string;
  informal_name: string;
  registration_date: string | null;
  sic_code: string | null;
  company_status: string | null;
  company_category: string | null;
  address: RegistrarAddress;
  addressHash: string;
  /** Covers the Org's own fields and its registered address (the Org shows it). */
  orgHash: string;
  /**
   * Fingerprint of the row's raw text (with its file's header and the register country), set by the
   * feed; null when the row had warnings. Stored on the Org (source_fingerprint).
   */
  fingerprint?: string | null;
  /**
   * A row recognised by its fingerprint as what its Org was last written from: only number, orgHash
   * (the Org's stored hash) and fingerprint are set; nothing was split or normalized.
   */
  known?: true;
  /**
   * Of a recognised row: the register's write count (registerWritesSql in registrar.recognize.ts) in
   * the snapshot its Org was read in. While it has not moved, the Org is still as recognised.
   */
  seen?: string;
}

const empty = (v: string): string | null => (v === '' ? null : v);

/** Upper case, spaces dropped, digits left-padded (after a 2-letter prefix): `SC12345` -> `SC012345`. */
export function normalizeCompanyNumber(value: string): string | null {
  const v = value.replace(/\s+/g, '').toUpperCase();
  if (v === '') return null;
  const prefixed = /^([A-Z]{2})(\d{1,5})$/.exec(v);
  const padded = prefixed ? prefixed[1]! + prefixed[2]!.padStart(6, '0') : v.padStart(8, '0');
  return /^[A-Z0-9]{8}$/.test(padded) ? padded : null;
}

/**
 * The company a rejected row names, or null: its CompanyNumber cell (at `column`, the header's position)
 * cut from the raw text, trimmed and normalized as an accepted row's number is (normalizeCompanyNumber:
 * `^[A-Z0-9]{8}$` after upper-casing and padding). Readable means the record is well-formed up to and
 * including that cell: a row rejected for its name, its column count, a broken quote after the number
 * or a file cut after it names its company; a row whose quoting breaks before the number (or that
 * holds fewer fields) does not, since where its second field starts cannot be trusted. `--full` counts
 * a company so named as present (registrar.close.ts closeMissingOrgs).
 */
export function readableCompanyNumber(raw: string, column: number): string | null {
  const cell = rawField(raw, column);
  return cell === null ? null : normalizeCompanyNumber(cell.trim());
}

/** Oldest incorporation date we believe (chartered companies go back to the 1600s). */
const MIN_YEAR = 1600;

/**
 * `DD/MM/YYYY` to `YYYY-MM-DD`. Returns `invalid` for impossible dates (31/02) and absurd ones
 * (before 1600 or in the future), `null` for empty.
 */
export function parseRegisterDate(value: string, today = new Date()): string | null | 'invalid' {
  if (value === '') return null;
  const m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(value);
  if (!m) return 'invalid';
  const [d, mo, y] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(y, mo - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d)
    return 'invalid';
  if (y < MIN_YEAR || date.getTime() > today.getTime() + 86_400_000) return 'invalid';
  return `${m[3]}-${m[2]!.padStart(2, '0')}-${m[1]!.padStart(2, '0')}`;
}

/** `62020 - Information technology ...` -> `62020`; old 4-digit codes kept; `None Supplied` -> null. */
export function parseSicCode(value: string): string | null {
  const m = /^(\d{4,5})(?!\d)/.exec(value.trim());
  return m ? m[1]! : null;
}

/**
 * Legal-form suffixes seen in the register, longest first so `PUBLIC LIMITED COMPANY` wins over
 * `LIMITED COMPANY`. Welsh forms (CYFYNGEDIG, CCC, CBC...) and foreign ones of overseas companies
 * included. Matched as whole words at the end, with any dots, commas or brackets around them.
 */
const SUFFIXES = [
  'PUBLIC LIMITED COMPANY',
  'CWMNI CYFYNGEDIG CYHOEDDUS',
  'COMMUNITY INTEREST COMPANY',
  'CWMNI BUDDIANT CYMUNEDOL',
  'COMMUNITY INTEREST PUBLIC LIMITED COMPANY',
  'CWMNI BUDDIANT CYMUNEDOL CYHOEDDUS CYFYNGEDIG',
  'LIMITED LIABILITY PARTNERSHIP',
  'PARTNERIAETH ATEBOLRWYDD CYFYNGEDIG',
  'LIMITED PARTNERSHIP',
  'PARTNERIAETH CYFYNGEDIG',
  'LIMITED LIABILITY COMPANY',
  'PRIVATE LIMITED COMPANY',
  'PRIVATE LIMITED',
  'PVT LTD',
  'PTY LTD',
  'PTY LIMITED',
  'COMPANY LIMITED',
  'LIMITED COMPANY',
  'UNLIMITED',
  'LIMITED',
  'CYFYNGEDIG',
  'CYF',
  'LTD',
  'PLC',
  'CCC',
  'CIC',
  'CBC',
  'CIO',
  'SCIO',
  'LLP',
  'PAC',
  'LP',
  'LLC',
  'INC',
  'INCORPORATED',
  'CORP',
  'CORPORATION',
  'GMBH',
  'GMBH CO KG',
  'GMBH AND CO KG',
  'AG',
  'SA',
  'SAS',
  'SARL',
  'SRL',
  'SPA',
  'BV',
  'NV',
  'AB',
  'OY',
  'OYJ',
  'ASA',
  'A/S',
  'APS',
  'SP Z OO',
  'PTE LTD',
  'SDN BHD',
  'BHD',
  'KFT',
  'ZRT',
  'SRO',
];

/** Dotted forms (`L.T.D.`, `C.I.C.`, `S.A.R.L.`) match once the dots are gone. */
const SUFFIX_RE = new RegExp(
  `[\\s,(]+(${SUFFIXES.sort((a, b) => b.length - a.length)
    .map((s) =>
      s
        .split(/\s+/)
        .map((w) => w.split('').join('\\.?') + '\\.?')
        .join('[\\s.&,]+'),
    )
    .join('|')})[\\s.,)]*$`,
  'iu',
);

/** The name without its legal suffix (`ACME WIDGETS LTD.` -> `ACME WIDGETS`); the name itself if none. */
export function informalNameOf(name: string): string {
  const stripped = name.replace(SUFFIX_RE, '').replace(/[\s,\-–&]+$/u, '');
  return stripped === '' ? name : stripped;
}

function registeredAddress(
  row: RegistrarRow,
  registerCountry: string,
  warnings: RowIssue[],
): RegistrarAddress {
  const careOf = empty(row.careOf);
  const poBox = empty(row.poBox);
  const extra = [
    careOf ? `C/O ${careOf}` : null,
    poBox ? (/^P\.?\s*O\.?\s*BOX/i.test(poBox) ? poBox : `PO BOX ${poBox}`) : null,
  ]
    .filter((v): v is string => v !== null)
    .join(', ');
  let country: string | null = registerCountry;
  if (row.country !== '') {
    country = countryCodeOf(row.country);
    if (country === null)
      warnings.push({ column: columnOf('country'), reason: `unknown country "${row.country}"` });
  }
  return {
    line1: empty(row.line1),
    line2: empty(row.line2),
    line3: empty(extra),
    city: empty(row.postTown),
    // The county column may hold a town or carry a trailing comma.
    state: empty(row.county.replace(/[\s,]+$/, '')),
    zip: empty(row.postCode.replace(/\s+/g, ' ').toUpperCase()),
    country_code: country,
  };
}

// One-shot crypto.hash: the same MD5 in the same encoding as createHash().update().digest(), at about
// half the cost (no Hash object per call; two hashes per row read).
const hash = (parts: readonly (string | null)[]) =>
  digest('md5', parts.map((p) => (p === null ? '\u0000' : p)).join('\u001f'), 'base64url');

/**
 * Normalizes one row for the given register country (`GB`). `today` bounds plausible dates.
 */
export function normalizeRegistrarRow(
  row: RegistrarRow,
  registerCountry: string,
  today = new Date(),
): NormalizedRow<RegistrarRecord> {
  const warnings: RowIssue[] = [];
  // The name as registered, so an Org shows the register's spelling: runs of spaces are kept ("SHARPEREDGES  SHARPENING LTD" is
  // a real row); only the ends are trimmed, as every value is. Search, not the importer, treats a run
  // of whitespace as one space.
  const name = row.name;
  if (name === '')
    return { ok: false, reject: { column: columnOf('name'), reason: 'missing company name' }, warnings };
  if (row.number === '') {
    return { ok: false, reject: { column: columnOf('number'), reason: 'missing company number' }, warnings };
  }
  const number = normalizeCompanyNumber(row.number);
  if (number === null) {
    return {
      ok: false,
      reject: { column: columnOf('number'), reason: `unusable company number "${row.number}"` },
      warnings,
    };
  }
  let date = parseRegisterDate(row.incorporationDate, today);
  if (date === 'invalid') {
    warnings.push({
      column: columnOf('incorporationDate'),
      reason: `impossible date "${row.incorporationDate}"`,
    });
    date = null;
  }
  const address = registeredAddress(row, registerCountry, warnings);
  const addressHash = hash([
    address.line1,
    address.line2,
    address.line3,
    address.city,
    address.state,
    address.zip,
    address.country_code,
  ]);
  const record: Omit<RegistrarRecord, 'orgHash'> = {
    number,
    name,
    informal_name: informalNameOf(name),
    registration_date: date,
    sic_code: parseSicCode(row.sic1),
    company_status: empty(row.status),
    company_category: empty(row.category),
    address,
    addressHash,
  };
  const orgHash = hash([
    record.name,
    record.informal_name,
    record.registration_date,
    record.sic_code,
    record.company_status,
    record.company_category,
    addressHash,
  ]);
  return { ok: true, record: { ...record, orgHash }, warnings };
}
