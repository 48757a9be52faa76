import type { Static } from 'typebox';
import { addressDomain } from '../../shared/domains.js';
import { ADDRESS_FIELDS, type AddressField } from '../../shared/record-fields.js';
import type { AddressSchema } from '../http/common.schema.js';
import type { AddressRecord } from './records.js';

export type AddressView = Static<typeof AddressSchema>;

const nullFields = Object.fromEntries(ADDRESS_FIELDS.map((f) => [f, null])) as Record<AddressField, null>;

/** An unknown address is still an object (docs/decisions.md, Response shape): every member null. */
export const EMPTY_ADDRESS: AddressView = Object.freeze({
  domain: null,
  ...nullFields,
  version_number: null,
});

/** The postal fields (record-fields.ts) between the domain and the version, in the contract's order. */
export function toAddressView(a: AddressRecord | null, suffix: string): AddressView {
  if (!a) return EMPTY_ADDRESS;
  const view: Record<string, string | number | null> = { domain: addressDomain(a.uid, a.domain_cc, suffix) };
  for (const f of ADDRESS_FIELDS) view[f] = a[f];
  view.version_number = a.version_number;
  return view as AddressView;
}

/** Date-times go out as ISO 8601 UTC with `Z`, whether they came as Dates or as JSON strings. */
export const isoDateTime = (value: Date | string) => new Date(value).toISOString();
