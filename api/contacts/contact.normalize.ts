import type { Static } from 'typebox';
import { ISO_CODES } from '../../shared/countries.js';
import { badRequest } from '../../shared/errors.js';
import { US_STATE_CODES } from '../../shared/us-states.js';
import type { ContactBodySchema } from './contact.schema.js';

export type ContactInput = Static<typeof ContactBodySchema>;
export type ContactData = Record<string, string | boolean | null>;

export interface NormalizedContact {
  emailKey: string | null;
  firstName: string | null;
  lastName: string | null;
  data: ContactData;
}

const URL_FIELDS = [
  'avatar_url',
  'website_url',
  'socialnet_url',
  'professionalnet_url',
  'videosite_url',
  'videosite2_url',
  'shortvideo_url',
  'pinboard_url',
  'audiorooms_url',
  'messagingcam_url',
] as const;
const HANDLE_FIELDS = ['microblog_handle', 'photoshare_handle'] as const;
const HANDLE = /^@?[A-Za-z0-9_.-]{1,100}$/;

const SALUTATIONS = new Set([
  'mr',
  'mrs',
  'ms',
  'miss',
  'mx',
  'dr',
  'prof',
  'professor',
  'sir',
  'dame',
  'lord',
  'lady',
  'rev',
  'revd',
  'fr',
]);

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * `full_name` → salutation, first and last name: a leading title (`Dr`, `Mrs.`) is the salutation,
 * the next word the first name, the rest the last name (keeps `van der Berg` whole).
 */
export function splitFullName(full: string): {
  salutation: string | null;
  first: string | null;
  last: string | null;
} {
  const words = full.trim().split(/\s+/).filter(Boolean);
  let salutation: string | null = null;
  if (words.length > 1 && SALUTATIONS.has(words[0]!.toLowerCase().replace(/\.$/, ''))) {
    salutation = words.shift()!;
  }
  const [first, ...rest] = words;
  return { salutation, first: first ?? null, last: rest.length > 0 ? rest.join(' ') : null };
}

/** Checks what the schema cannot say and fills the derived fields; throws 400 naming the field. */
export function normalizeContact(input: ContactInput): NormalizedContact {
  const data: ContactData = {};
  for (const [k, v] of Object.entries(input)) {
    if (v === null || v === undefined) continue;
    const value = typeof v === 'string' ? v.trim() : v;
    if (value !== '') data[k] = value;
  }
  const text = (k: string) => (typeof data[k] === 'string' ? (data[k] as string) : null);

  for (const field of URL_FIELDS) {
    const v = text(field);
    if (v !== null && !isHttpUrl(v)) throw badRequest(`${field} must be an http or https URL`);
  }
  for (const field of HANDLE_FIELDS) {
    const v = text(field);
    if (v !== null && !(v.includes('/') ? isHttpUrl(v) : HANDLE.test(v))) {
      throw badRequest(`${field} must be a handle or an http or https URL`);
    }
  }
  const country = text('country_code')?.toUpperCase() ?? null;
  if (country !== null) {
    if (!ISO_CODES.has(country)) throw badRequest('country_code must be an ISO 3166 alpha-2 country code');
    data.country_code = country;
  }
  const state = text('state_code');
  if (state !== null) {
    if (!/^[A-Z]{2}$/.test(state)) throw badRequest('state_code must be 2 upper-case letters');
    if (country === 'US' && !US_STATE_CODES.has(state))
      throw badRequest('state_code must be a US state code');
  }

  let first = text('first_name');
  let last = text('last_name');
  const full = text('full_name');
  if (full !== null && first === null && last === null) {
    const split = splitFullName(full);
    first = split.first;
    last = split.last;
    if (split.salutation && text('salutation') === null) data.salutation = split.salutation;
  }
  if (first === null && last === null) throw badRequest('full_name or first_name/last_name is required');
  data.first_name = first;
  data.last_name = last;

  const email = text('email');
  return { emailKey: email ? email.toLowerCase() : null, firstName: first, lastName: last, data };
}
