import Type, { type Static, type TSchema } from 'typebox';

/**
 * A documented field whose value may be unknown: always present, `null` when unknown. Written as
 * OpenAPI 3.0 `nullable` rather than `anyOf [T, null]`: the serializer then checks `=== null` instead
 * of validating the value against each branch, a cost paid for every Org with a default Location
 * (docs/journal/2026-11-22.md, 02:16); Ajv and the OpenAPI document understand it alike.
 */
export const Nullable = <T extends TSchema>(schema: T) =>
  Type.Unsafe<Static<T> | null>({ ...schema, nullable: true });

export const NullableString = (description?: string) =>
  Nullable(Type.String(description ? { description } : {}));

export const ErrorSchema = Type.Object(
  {
    code: Type.Integer({ format: 'int32', description: 'Equals the HTTP status.' }),
    message: Type.String({ description: '`<Status text>: <reason>`' }),
  },
  { $id: 'Error', title: 'Error' },
);

export const RequestMetaSchema = Type.Object(
  {
    id: Type.String({ description: 'Unique request identifier, also sent as X-Request-Id.' }),
    success: Type.Boolean(),
    period_start: Type.String({ format: 'date-time' }),
    next_period_start: Type.String({ format: 'date-time' }),
    requests_this_period: Type.Integer(),
    credit_available_this_period: Type.Integer(),
    credit_used_this_request: Type.Integer(),
    credit_used_this_period: Type.Integer(),
    credit_remaining_this_period: Type.Integer(),
    account_id: Type.String(),
    subscription_id: Type.String(),
  },
  { title: 'RequestMetadata', description: 'Data-credit usage; counts the request it is part of.' },
);

export const PhonesSchema = Type.Object(
  {
    default: NullableString(),
    alt: NullableString(),
    local: NullableString(),
    fax: NullableString(),
    mobile: NullableString(),
    free: NullableString('Toll-free number.'),
    tty: NullableString('Teletypewriter number.'),
  },
  { title: 'Phones' },
);

export const EmailsSchema = Type.Object({ default: NullableString() }, { title: 'Emails' });

export const AddressSchema = Type.Object(
  {
    domain: NullableString('Address stable domain ending `.a.<country_code>.{domain_suffix}`.'),
    line1: NullableString(),
    line2: NullableString(),
    line3: NullableString(),
    city: NullableString(),
    sublocality: NullableString(),
    state: NullableString(),
    state_code: NullableString(),
    zip: NullableString(),
    country_code: NullableString('ISO 3166 alpha-2, upper case.'),
    version_number: Nullable(Type.Integer()),
  },
  { title: 'Address' },
);

/** Path parameter of every by-domain route. */
export const DomainParams = Type.Object({
  domain: Type.String({
    minLength: 1,
    maxLength: 300,
    description: 'A domain ending in `.{domain_suffix}`.',
  }),
});

export const ApiKeyQuery = {
  api_key: Type.Optional(Type.String({ maxLength: 200, description: 'Your API key.' })),
};

/** The error responses every metered route documents. */
export const meteredErrors = {
  400: ErrorSchema,
  402: ErrorSchema,
  403: ErrorSchema,
  404: ErrorSchema,
  429: ErrorSchema,
  500: ErrorSchema,
  503: ErrorSchema,
} as const;

/** Shown on every conditional read (the single-record and list GETs). */
export const CONDITIONAL_READ =
  'Conditional reads: every 200 carries a strong `ETag` that changes exactly when the body apart from ' +
  '`request` changes. Send it back as `If-None-Match` to get `304 Not Modified` with no body and no ' +
  'credit used (the 304 is not counted in `requests_this_period`, and is answered even when the ' +
  "period's credits are spent); a stale tag gets the normal 200. The api_key is checked first: a bad " +
  'key is 403, never 304. A 304 counts against the rate limit like any other request.';

const ETAG_HEADER = {
  ETag: {
    type: 'string',
    description: 'Strong entity tag of the body apart from `request`; send it back in If-None-Match.',
  },
};

/** A 200 response schema documented with its ETag header (@fastify/swagger reads `headers`). */
export const withEtag = <T extends TSchema>(schema: T): T =>
  ({ ...schema, headers: { ...ETAG_HEADER } }) as T;

export const NotModifiedSchema = Type.Unsafe<null>({
  type: 'null',
  description: 'Not Modified: the If-None-Match tag is current. No body, no credit used.',
  headers: { ...ETAG_HEADER },
});
