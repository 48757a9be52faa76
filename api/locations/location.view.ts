import type { Static } from 'typebox';
import { locationDomain, locationPublicDomain } from '../../shared/domains.js';
import { LINK_KEYS, PHONE_KEYS } from '../../shared/record-fields.js';
import type { HoursEntryJson, PhonesJson } from '../../shared/tables.js';
import type { PhonesSchema } from '../http/common.schema.js';
import { isoDateTime, toAddressView } from '../records/address.view.js';
import type { AddressRecord, LocationRecord } from '../records/records.js';
import type { HoursSchema, LinksSchema, LocationSchema } from './location.schema.js';

export type LocationView = Static<typeof LocationSchema>;
type PhonesView = Static<typeof PhonesSchema>;
type HoursView = Static<typeof HoursSchema>;
type LinksView = Static<typeof LinksSchema>;

/** Every key of `keys` (record-fields.ts), null where the stored object lacks it. */
function everyKey<K extends string>(
  keys: readonly K[],
  o: Partial<Record<K, string | null>> | null | undefined,
) {
  const out = {} as Record<K, string | null>;
  for (const k of keys) out[k] = o?.[k] ?? null;
  return out;
}

export function toPhonesView(p: PhonesJson | null | undefined): PhonesView {
  return everyKey(PHONE_KEYS, p);
}

const entry = (e: HoursEntryJson) => ({ open: e.open, open_time: e.open_time, close_time: e.close_time });

function toHoursView(h: LocationRecord['hours']): HoursView {
  return {
    normal: (h?.normal ?? [])
      .filter((e) => typeof e.day === 'number')
      .map((e) => ({ day: e.day!, ...entry(e) })),
    message: h?.message ?? null,
    special: (h?.special ?? [])
      .filter((e) => typeof e.date === 'string')
      .map((e) => ({ date: e.date!, ...entry(e) })),
    special_message: h?.special_message ?? null,
  };
}

function toLinksView(l: LocationRecord['links']): LinksView {
  return everyKey(LINK_KEYS, l);
}

export function toLocationView(
  l: LocationRecord,
  address: AddressRecord | null,
  orgDomain: string,
  suffix: string,
): LocationView {
  return {
    address: toAddressView(address, suffix),
    address_verified: l.address_verified,
    code: l.code,
    closed_date: l.closed_date,
    default: l.is_default,
    description: l.description,
    domain: locationDomain(l.uid, l.domain_cc, suffix),
    emails: { default: l.email },
    hours: toHoursView(l.hours),
    links: toLinksView(l.links),
    name: l.name,
    org_domain: orgDomain,
    phones: toPhonesView(l.phones),
    public_domain: locationPublicDomain(l.public_slug, suffix),
    updated: isoDateTime(l.updated),
    version_number: l.version_number,
    year_established: l.year_established,
  };
}
