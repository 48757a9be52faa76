import { REGISTRAR_COLUMNS, REGISTRAR_HEADER_LINE } from '../../ingest/registrar/registrar.parser.js';

/**
 * Builds register files in the real format: the real header (with its leading spaces), every field
 * double-quoted, quotes doubled. Used by tests and the import benchmark.
 */
export type RegistrarColumn = (typeof REGISTRAR_COLUMNS)[number];
export type RegistrarFields = Partial<Record<RegistrarColumn, string>>;

const quote = (v: string) => `"${v.replaceAll('"', '""')}"`;

/** A plausible live company; `fields` override any column. */
export function registrarFields(number: string, name: string, fields: RegistrarFields = {}): RegistrarFields {
  return {
    CompanyName: name,
    CompanyNumber: number,
    'RegAddress.AddressLine1': '1 HIGH STREET',
    'RegAddress.PostTown': 'LONDON',
    'RegAddress.Country': 'ENGLAND',
    'RegAddress.PostCode': 'EC1A 1BB',
    CompanyCategory: 'Private Limited Company',
    CompanyStatus: 'Active',
    CountryOfOrigin: 'United Kingdom',
    IncorporationDate: '14/03/2016',
    'Accounts.AccountRefDay': '31',
    'Accounts.AccountRefMonth': '3',
    'Mortgages.NumMortCharges': '0',
    'Mortgages.NumMortOutstanding': '0',
    'Mortgages.NumMortPartSatisfied': '0',
    'Mortgages.NumMortSatisfied': '0',
    'SICCode.SicText_1': '62020 - Information technology consultancy activities',
    'LimitedPartnerships.NumGenPartners': '0',
    'LimitedPartnerships.NumLimPartners': '0',
    URI: `http://business.data.gov.uk/id/company/${number}`,
    ConfStmtNextDueDate: '28/03/2026',
    ConfStmtLastMadeUpDate: '14/03/2025',
    ...fields,
  };
}

export function registrarLine(fields: RegistrarFields): string {
  return REGISTRAR_COLUMNS.map((c) => quote(fields[c] ?? '')).join(',');
}

export function registrarCsv(rows: readonly (RegistrarFields | string)[], eol: '\n' | '\r\n' = '\n'): string {
  const lines = rows.map((r) => (typeof r === 'string' ? r : registrarLine(r)));
  return [REGISTRAR_HEADER_LINE, ...lines].join(eol) + eol;
}
