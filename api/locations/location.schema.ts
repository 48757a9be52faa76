import Type from 'typebox';
import {
  AddressSchema,
  EmailsSchema,
  Nullable,
  NullableString,
  PhonesSchema,
} from '../http/common.schema.js';

const HoursEntryFields = {
  open: Type.Boolean(),
  open_time: Type.String({ description: '`HH:MM`' }),
  close_time: Type.String({ description: '`HH:MM`; `24:00` for open until midnight.' }),
};

export const HoursSchema = Type.Object(
  {
    normal: Type.Array(
      Type.Object({
        day: Type.Integer({ minimum: 0, maximum: 6, description: '0 Sunday ... 6 Saturday' }),
        ...HoursEntryFields,
      }),
    ),
    message: NullableString('Shown next to the normal hours.'),
    special: Type.Array(Type.Object({ date: Type.String({ format: 'date' }), ...HoursEntryFields })),
    special_message: NullableString('Shown next to the special hours.'),
  },
  { title: 'Hours' },
);

export const LinksSchema = Type.Object(
  {
    socialnet_url: NullableString(),
    photoshare_url: NullableString(),
    professionalnet_url: NullableString(),
    shortvideo_url: NullableString(),
    microblog_url: NullableString(),
    website_url: NullableString(),
    videosite_url: NullableString(),
  },
  { title: 'Links' },
);

export const LocationSchema = Type.Object(
  {
    address: AddressSchema,
    address_verified: Type.Boolean(),
    code: NullableString('Code set by the owner (store code).'),
    closed_date: NullableString('`YYYY-MM-DD`'),
    default: Type.Boolean(),
    description: NullableString(),
    domain: Type.String({ description: 'Stable domain `<id>.loc.<cc>.{domain_suffix}`.' }),
    emails: EmailsSchema,
    hours: HoursSchema,
    links: LinksSchema,
    name: NullableString(),
    org_domain: Type.String({ description: 'Stable domain of the owning Org.' }),
    phones: PhonesSchema,
    public_domain: Type.String({ description: 'Public domain `<slug>.loc.{domain_suffix}`.' }),
    updated: Type.String({ format: 'date-time' }),
    version_number: Type.Integer(),
    year_established: Nullable(Type.Integer()),
  },
  { title: 'Location' },
);

export const LocationsListSchema = Type.Object(
  {
    total: Type.Integer({ description: 'Number of Locations of the Org, whatever the page.' }),
    results: Type.Array(LocationSchema),
  },
  { title: 'LocationsList' },
);
