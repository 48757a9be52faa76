import type { Static } from 'typebox';
import { addressDomain } from '../../shared/domains.js';
import type { AddressSchema } from '../http/common.schema.js';
import type { AddressRecord } from './records.js';

export type AddressView = Static<typeof AddressSchema>;

/** An unknown address is still an object (DECISIONS.md): every member null. */
export const EMPTY_ADDRESS: AddressView = Object.freeze({
  domain: null,
  line1: null,
  line2: null,
  line3: null,
  city: null,
  sublocality: null,
  state: null,
  state_code: null,
  zip: null,
  country_code: null,
  version_number: null,
});

export function toAddressView(a: AddressRecord | null, suffix: string): AddressView {
  if (!a) return EMPTY_ADDRESS;
  return {
    domain: addressDomain(a.uid, a.domain_cc, suffix),
    line1: a.line1,
    line2: a.line2,
    line3: a.line3,
    city: a.city,
    sublocality: a.sublocality,
    state: a.state,
    state_code: a.state_code,
    zip: a.zip,
    country_code: a.country_code,
    version_number: a.version_number,
  };
}

/** Date-times go out as ISO 8601 UTC with `Z`, whether they came as Dates or as JSON strings. */
export const isoDateTime = (value: Date | string) => new Date(value).toISOString();
