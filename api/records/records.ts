import type { AddressFields, HoursJson, LinksJson, PhonesJson } from '../../shared/database.js';

/**
 * Row shapes the read models hand to the views. Nested records arrive as `to_jsonb(row)`, so their
 * timestamps are ISO strings rather than Dates; the views accept both.
 */
export interface AddressRecord extends AddressFields {
  uid: string;
  domain_cc: string;
  version_number: number;
}

export interface LocationRecord {
  uid: string;
  domain_cc: string;
  public_slug: string;
  code: string | null;
  name: string | null;
  description: string | null;
  address_verified: boolean;
  closed_date: string | null;
  is_default: boolean;
  email: string | null;
  phones: PhonesJson | null;
  hours: HoursJson | null;
  links: LinksJson | null;
  year_established: number | null;
  version_number: number;
  updated: Date | string;
}

export interface OrgRecord {
  id: number;
  uid: string;
  domain_cc: string;
  public_slug: string;
  name: string;
  informal_name: string | null;
  description: string | null;
  email: string | null;
  logo_url: string | null;
  phones: PhonesJson | null;
  sic_code: string | null;
  vat_number: string | null;
  registration_country: string | null;
  registration_number: string | null;
  registration_date: string | null;
  registration_state_code: string | null;
  version_number: number;
  updated: Date | string;
  registered_address: AddressRecord | null;
  default_location: LocationRecord | null;
  default_address: AddressRecord | null;
  open_locations: number;
}

export interface LocationWithOrgRecord extends LocationRecord {
  address: AddressRecord | null;
  org_uid: string;
  org_domain_cc: string;
}

/**
 * A nested record as a JSON object of just the columns the views read (`null` when the join found
 * nothing). `to_jsonb(row)` converted every column, wide jsonb and text ones included, and measured
 * as a third of the Org query's cost in Postgres (pgbench, prepared: 7,700 tps with it, 10,000 without).
 */
export const ADDRESS_JSON_COLUMNS = [
  'uid',
  'domain_cc',
  'line1',
  'line2',
  'line3',
  'city',
  'sublocality',
  'state',
  'state_code',
  'zip',
  'country_code',
  'version_number',
] as const;

export const LOCATION_JSON_COLUMNS = [
  'uid',
  'domain_cc',
  'public_slug',
  'code',
  'name',
  'description',
  'address_verified',
  'closed_date',
  'is_default',
  'email',
  'phones',
  'hours',
  'links',
  'year_established',
  'version_number',
  'updated',
] as const;
