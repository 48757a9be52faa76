import Type from 'typebox';
import {
  AddressSchema,
  EmailsSchema,
  Nullable,
  NullableString,
  PhonesSchema,
} from '../http/common.schema.js';
import { LocationSchema } from '../locations/location.schema.js';

export const RegistrationSchema = Type.Object(
  {
    country_code: NullableString('ISO 3166 alpha-2, upper case.'),
    date: NullableString('`YYYY-MM-DD`'),
    number: NullableString('Registration number issued by the registrar.'),
    state_code: NullableString(),
    address: AddressSchema,
  },
  { title: 'Registration' },
);

export const OrgSchema = Type.Object(
  {
    description: NullableString(),
    domain: Type.String({ description: 'Stable domain `<id>.<cc>.{domain_suffix}`.' }),
    emails: EmailsSchema,
    industry: Type.Object({ sic_code: NullableString('UK SIC 2007 code.') }),
    informal_name: NullableString(),
    locations: Type.Object({
      count: Type.Integer({ description: 'Open Locations of the Org.' }),
      default: Nullable(LocationSchema),
    }),
    logo_url: NullableString(),
    name: Type.String(),
    phones: PhonesSchema,
    public_domain: Type.String({ description: 'Public domain `<slug>.{domain_suffix}`.' }),
    registration: RegistrationSchema,
    updated: Type.String({ format: 'date-time' }),
    vat: Type.Object({ number: NullableString('VAT registration number.') }),
    version_number: Type.Integer(),
  },
  { title: 'Org' },
);

export const OrgsListSchema = Type.Object(
  { total: Type.Integer(), results: Type.Array(OrgSchema) },
  { title: 'OrgsList' },
);
