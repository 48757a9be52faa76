import { FeedFormatError } from '../../shared/errors.js';

/**
 * The company register bulk file (docs/feeds.md section 1): 55 columns, mapped by trimmed name, never by
 * position. A missing column is a hard error for the whole file.
 */
export const REGISTRAR_COLUMNS = [
  'CompanyName',
  'CompanyNumber',
  'RegAddress.CareOf',
  'RegAddress.POBox',
  'RegAddress.AddressLine1',
  'RegAddress.AddressLine2',
  'RegAddress.PostTown',
  'RegAddress.County',
  'RegAddress.Country',
  'RegAddress.PostCode',
  'CompanyCategory',
  'CompanyStatus',
  'CountryOfOrigin',
  'DissolutionDate',
  'IncorporationDate',
  'Accounts.AccountRefDay',
  'Accounts.AccountRefMonth',
  'Accounts.NextDueDate',
  'Accounts.LastMadeUpDate',
  'Accounts.AccountCategory',
  'Returns.NextDueDate',
  'Returns.LastMadeUpDate',
  'Mortgages.NumMortCharges',
  'Mortgages.NumMortOutstanding',
  'Mortgages.NumMortPartSatisfied',
  'Mortgages.NumMortSatisfied',
  'SICCode.SicText_1',
  'SICCode.SicText_2',
  'SICCode.SicText_3',
  'SICCode.SicText_4',
  'LimitedPartnerships.NumGenPartners',
  'LimitedPartnerships.NumLimPartners',
  'URI',
  ...Array.from({ length: 10 }, (_, i) => [
    `PreviousName_${i + 1}.CONDATE`,
    `PreviousName_${i + 1}.CompanyName`,
  ]).flat(),
  'ConfStmtNextDueDate',
  'ConfStmtLastMadeUpDate',
] as const;

/** The header exactly as the registrar ships it (14 names carry a leading space). */
export const REGISTRAR_HEADER_LINE =
  'CompanyName, CompanyNumber,RegAddress.CareOf,RegAddress.POBox,RegAddress.AddressLine1, RegAddress.AddressLine2,RegAddress.PostTown,RegAddress.County,RegAddress.Country,RegAddress.PostCode,CompanyCategory,CompanyStatus,CountryOfOrigin,DissolutionDate,IncorporationDate,Accounts.AccountRefDay,Accounts.AccountRefMonth,Accounts.NextDueDate,Accounts.LastMadeUpDate,Accounts.AccountCategory,Returns.NextDueDate,Returns.LastMadeUpDate,Mortgages.NumMortCharges,Mortgages.NumMortOutstanding,Mortgages.NumMortPartSatisfied,Mortgages.NumMortSatisfied,SICCode.SicText_1,SICCode.SicText_2,SICCode.SicText_3,SICCode.SicText_4,LimitedPartnerships.NumGenPartners,LimitedPartnerships.NumLimPartners,URI,PreviousName_1.CONDATE, PreviousName_1.CompanyName, PreviousName_2.CONDATE, PreviousName_2.CompanyName,PreviousName_3.CONDATE, PreviousName_3.CompanyName,PreviousName_4.CONDATE, PreviousName_4.CompanyName,PreviousName_5.CONDATE, PreviousName_5.CompanyName,PreviousName_6.CONDATE, PreviousName_6.CompanyName,PreviousName_7.CONDATE, PreviousName_7.CompanyName,PreviousName_8.CONDATE, PreviousName_8.CompanyName,PreviousName_9.CONDATE, PreviousName_9.CompanyName,PreviousName_10.CONDATE, PreviousName_10.CompanyName,ConfStmtNextDueDate, ConfStmtLastMadeUpDate';

/** The columns this service uses; the rest are read past. */
const USED = {
  name: 'CompanyName',
  number: 'CompanyNumber',
  careOf: 'RegAddress.CareOf',
  poBox: 'RegAddress.POBox',
  line1: 'RegAddress.AddressLine1',
  line2: 'RegAddress.AddressLine2',
  postTown: 'RegAddress.PostTown',
  county: 'RegAddress.County',
  country: 'RegAddress.Country',
  postCode: 'RegAddress.PostCode',
  category: 'CompanyCategory',
  status: 'CompanyStatus',
  incorporationDate: 'IncorporationDate',
  sic1: 'SICCode.SicText_1',
} as const;

export type RegistrarField = keyof typeof USED;
export type RegistrarRow = Record<RegistrarField, string>;
export type RegistrarColumnIndex = Record<RegistrarField, number>;

/** Column name (as in the file, trimmed) of a field, for reject messages. */
export const columnOf = (field: RegistrarField): string => USED[field];

/**
 * Checks the trimmed header holds every register column and returns where the used ones are.
 * Throws FeedFormatError naming the missing columns.
 */
export function mapRegistrarHeader(header: readonly string[]): RegistrarColumnIndex {
  const position = new Map<string, number>();
  header.forEach((name, i) => {
    if (!position.has(name.trim())) position.set(name.trim(), i);
  });
  const missing = REGISTRAR_COLUMNS.filter((c) => !position.has(c));
  if (missing.length > 0) {
    const shown =
      missing.slice(0, 8).join(', ') + (missing.length > 8 ? `, ... (${missing.length} in all)` : '');
    throw new FeedFormatError(
      `not a company register file: missing column${missing.length > 1 ? 's' : ''} ${shown}`,
    );
  }
  const index = {} as RegistrarColumnIndex;
  for (const [field, column] of Object.entries(USED) as [RegistrarField, string][]) {
    index[field] = position.get(column)!;
  }
  return index;
}

/** Picks the used fields out of a record's values (trimmed; every value stays a string). */
export function readRegistrarRow(fields: readonly string[], index: RegistrarColumnIndex): RegistrarRow {
  const row = {} as RegistrarRow;
  for (const key in index) {
    const field = key as RegistrarField;
    row[field] = (fields[index[field]] ?? '').trim();
  }
  return row;
}

/**
 * The `index`-th field of a raw CSV record (0-based), unquoted, without splitting the rest; null when
 * the record is malformed before it. Used to key a row before deciding whether to split it at all.
 */
export function rawField(raw: string, index: number): string | null {
  let pos = 0;
  for (let f = 0; ; f++) {
    let value: string;
    if (raw.charCodeAt(pos) === 34) {
      value = '';
      let i = pos + 1;
      for (;;) {
        const q = raw.indexOf('"', i);
        if (q < 0) return null;
        if (raw.charCodeAt(q + 1) === 34) {
          value += raw.slice(i, q + 1);
          i = q + 2;
          continue;
        }
        value += raw.slice(i, q);
        pos = q + 1;
        break;
      }
    } else {
      const comma = raw.indexOf(',', pos);
      const end = comma < 0 ? raw.length : comma;
      value = raw.slice(pos, end);
      pos = end;
    }
    if (f === index) return value;
    if (raw.charCodeAt(pos) !== 44) return null;
    pos++;
  }
}
