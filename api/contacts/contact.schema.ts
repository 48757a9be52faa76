import Type from 'typebox';
import { Nullable } from '../http/common.schema.js';

const Text = (description?: string, maxLength = 300) =>
  Type.Optional(Nullable(Type.String({ maxLength, ...(description ? { description } : {}) })));
const Url = (description?: string) => Text(description ?? 'http(s) URL', 2048);

/** The POST /v1/contact body table of the spec; anything else is refused (400 naming the field). */
export const ContactBodySchema = Type.Object(
  {
    first_name: Text(),
    last_name: Text(),
    full_name: Text('Split into first and last name; a leading salutation moves to `salutation`.'),
    salutation: Text('For example Mr, Mrs, Miss, Dr.', 40),
    email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 320 }))),
    email_opt_out: Type.Optional(Nullable(Type.Boolean())),
    org_name: Text(),
    registration_number: Text(),
    vat_registration_number: Text(),
    job_title: Text(),
    department: Text(),
    country_code: Text('ISO 3166 alpha-2.', 2),
    avatar_url: Url('URL of an image.'),
    phone: Text(undefined, 50),
    phone_alt: Text(undefined, 50),
    phone_local: Text(undefined, 50),
    phone_mobile: Text(undefined, 50),
    phone_free: Text('Toll-free number.', 50),
    phone_tty: Text(undefined, 50),
    website_url: Url(),
    microblog_handle: Text('Handle or full URL.', 2048),
    photoshare_handle: Text('Handle or full URL.', 2048),
    socialnet_url: Url(),
    professionalnet_url: Url(),
    videosite_url: Url(),
    videosite2_url: Url(),
    shortvideo_url: Url(),
    pinboard_url: Url(),
    audiorooms_url: Url(),
    messagingcam_url: Url(),
    line1: Text(),
    line2: Text(),
    line3: Text(),
    city: Text(),
    sublocality: Text(),
    state: Text('State name.'),
    state_code: Text('Upper case, 2 letters (a US state code when country_code is US).', 2),
    zip: Text(undefined, 20),
  },
  { additionalProperties: false, title: 'ContactInput' },
);

export const ContactResultSchema = Type.Object(
  {
    created: Type.Boolean({ description: 'false when the account already had a contact with this email.' }),
    id: Type.String(),
  },
  { title: 'Contact' },
);
