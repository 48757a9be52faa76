import type { Selectable } from 'kysely';
import { ADDRESS_FIELDS } from '../../shared/record-fields.js';
import type {
  AddressesTable,
  HoursJson,
  LinksJson,
  LocationsTable,
  OrgsTable,
  PhonesJson,
} from '../../shared/tables.js';

/**
 * Row shapes the read models hand to the views, derived from the column lists below (the columns the
 * views read) and the table types. Nested records arrive as `json_build_object`, so their timestamps
 * are ISO strings rather than Dates; the views accept both.
 */
export type AddressRecord = Pick<Selectable<AddressesTable>, Exclude<AddressJsonColumn, 'uid'>> & {
  uid: string;
};

/** Columns typed otherwise than the table type says: the nested parts may be null, `updated` a string. */
interface LocationRecordOverrides {
  phones: PhonesJson | null;
  hours: HoursJson | null;
  links: LinksJson | null;
  updated: Date | string;
}

export type LocationRecord = {
  [K in LocationJsonColumn]: K extends keyof LocationRecordOverrides
    ? LocationRecordOverrides[K]
    : Selectable<LocationsTable>[K];
};

/** The Org columns the views read, in select order (org.read-model.ts selects them). */
export const ORG_COLUMNS = [
  'id',
  'uid',
  'domain_cc',
  'public_slug',
  'name',
  'informal_name',
  'description',
  'email',
  'logo_url',
  'phones',
  'sic_code',
  'vat_number',
  'registration_country',
  'registration_number',
  'registration_date',
  'registration_state_code',
  'version_number',
  'updated',
] as const satisfies readonly (keyof OrgsTable | 'uid')[];
export type OrgColumn = (typeof ORG_COLUMNS)[number];

/** `uid` is not stored for Orgs and Addresses (migration 0023): the read models select bizdir_uid(id). */
export type OrgRecord = Omit<Pick<Selectable<OrgsTable>, Exclude<OrgColumn, 'uid'>>, 'phones' | 'updated'> & {
  uid: string;
  phones: PhonesJson | null;
  updated: Date | string;
  registered_address: AddressRecord | null;
  default_location: LocationRecord | null;
  default_address: AddressRecord | null;
  open_locations: number;
};

export interface LocationWithOrgRecord extends LocationRecord {
  address: AddressRecord | null;
  org_uid: string;
  org_domain_cc: string;
}

/**
 * A nested record as a JSON object of just the columns the views read (`null` when the join found
 * nothing). `to_jsonb(row)` converted every column, wide jsonb and text ones included, a large share
 * of the Org query's cost in Postgres (docs/journal/2026-11-23.md, 20:01).
 */
export const ADDRESS_JSON_COLUMNS = [
  'uid',
  'domain_cc',
  ...ADDRESS_FIELDS,
  'version_number',
] as const satisfies readonly (keyof AddressesTable | 'uid')[];
type AddressJsonColumn = (typeof ADDRESS_JSON_COLUMNS)[number];

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
] as const satisfies readonly (keyof LocationsTable)[];
type LocationJsonColumn = (typeof LOCATION_JSON_COLUMNS)[number];
