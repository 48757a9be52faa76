/**
 * The fields of a Location and of an Address, declared once. The table types (database.ts), the
 * location feed's merge and writer, and the API's select lists are derived from these lists; the
 * API contract test writes them out again from the spec, as the independent check.
 *
 * Order counts: an Address's content hash is the JSON text of its fields in ADDRESS_FIELDS order,
 * and phones and links are hashed in PHONE_KEYS and LINK_KEYS order. Reordering would make every
 * stored record look changed to the next import: append, never reorder.
 */

/** The postal fields of an Address, as stored and as the API shows them. */
export const ADDRESS_FIELDS = [
  'line1',
  'line2',
  'line3',
  'city',
  'sublocality',
  'state',
  'state_code',
  'zip',
  'country_code',
] as const;
export type AddressField = (typeof ADDRESS_FIELDS)[number];

/** The members of a phones object (Orgs and Locations). */
export const PHONE_KEYS = ['default', 'alt', 'local', 'fax', 'mobile', 'free', 'tty'] as const;
export type PhoneKey = (typeof PHONE_KEYS)[number];

/** The members of a Location's links object. */
export const LINK_KEYS = [
  'socialnet_url',
  'photoshare_url',
  'professionalnet_url',
  'shortvideo_url',
  'microblog_url',
  'website_url',
  'videosite_url',
] as const;
export type LinkKey = (typeof LINK_KEYS)[number];

/**
 * A Location's content: what a sheet row sets and the content hash covers (its key, Org, Address,
 * slug and bookkeeping columns apart).
 */
export const LOCATION_CONTENT_FIELDS = [
  'name',
  'description',
  'phones',
  'hours',
  'links',
  'year_established',
  'latitude',
  'longitude',
  'primary_category',
  'categories',
  'labels',
  'logo_url',
] as const;
export type LocationContentField = (typeof LOCATION_CONTENT_FIELDS)[number];
