import { describe, expect, it } from 'vitest';
import { splitFullName } from '../api/contacts/contact.normalize.js';
import { newAccount, postJson, useTestApi } from './support/api.js';

const bad = (reason: string) => ({ status: 400, message: `Bad Request: ${reason}` });

// [what, body, expected status, expected message (for errors)]
const CASES: [string, unknown, { status: number; message?: string }][] = [
  ['full name only', { full_name: 'Grace Hopper' }, { status: 200 }],
  ['first and last name', { first_name: 'Alan', last_name: 'Turing' }, { status: 200 }],
  ['last name only', { last_name: 'Turing' }, { status: 200 }],
  [
    'every field',
    {
      first_name: 'Jane',
      last_name: 'Doe',
      salutation: 'Dr',
      email: 'jane@example.com',
      email_opt_out: true,
      org_name: 'Acme',
      registration_number: '01234567',
      vat_registration_number: 'GB123456789',
      job_title: 'CTO',
      department: 'Engineering',
      country_code: 'US',
      avatar_url: 'https://img.example/j.png',
      phone: '+1 555 0100',
      phone_alt: '+1 555 0101',
      phone_local: '555 0102',
      phone_mobile: '+1 555 0103',
      phone_free: '1-800-555-0104',
      phone_tty: '+1 555 0105',
      website_url: 'https://acme.example',
      microblog_handle: '@jane',
      photoshare_handle: 'https://photoshare.example/jane',
      socialnet_url: 'https://socialnet.example/jane',
      professionalnet_url: 'https://pro.example/jane',
      videosite_url: 'https://video.example/jane',
      videosite2_url: 'http://video2.example/jane',
      shortvideo_url: 'https://short.example/@jane',
      pinboard_url: 'https://pin.example/jane',
      audiorooms_url: 'https://rooms.example/jane',
      messagingcam_url: 'https://cam.example/jane',
      line1: '1 Main St',
      line2: 'Suite 2',
      line3: 'Floor 3',
      city: 'Springfield',
      sublocality: 'Downtown',
      state: 'Illinois',
      state_code: 'IL',
      zip: '62701',
    },
    { status: 200 },
  ],
  ['nulls are as good as absent', { full_name: 'Ada Byron', email: null, city: null }, { status: 200 }],
  ['no name', { email: 'x@example.com' }, bad('full_name or first_name/last_name is required')],
  ['blank name', { full_name: '   ' }, bad('full_name or first_name/last_name is required')],
  ['unknown field', { full_name: 'A B', nickname: 'ab' }, bad('unknown field nickname')],
  ['wrong type', { full_name: 'A B', email_opt_out: 'yes' }, bad('email_opt_out must be a boolean')],
  ['number for a string', { first_name: 42 }, bad('first_name must be a string')],
  ['invalid email', { full_name: 'A B', email: 'not-an-email' }, bad('email must be a valid email address')],
  [
    'unknown country',
    { full_name: 'A B', country_code: 'XX' },
    bad('country_code must be an ISO 3166 alpha-2 country code'),
  ],
  [
    'lower-case state code',
    { full_name: 'A B', state_code: 'il' },
    bad('state_code must be 2 upper-case letters'),
  ],
  [
    'not a US state',
    { full_name: 'A B', country_code: 'US', state_code: 'ZZ' },
    bad('state_code must be a US state code'),
  ],
  [
    'non-http URL',
    { full_name: 'A B', website_url: 'ftp://acme.example' },
    bad('website_url must be an http or https URL'),
  ],
  [
    'javascript URL',
    { full_name: 'A B', avatar_url: 'javascript:alert(1)' },
    bad('avatar_url must be an http or https URL'),
  ],
  [
    'bad handle',
    { full_name: 'A B', microblog_handle: 'two words' },
    bad('microblog_handle must be a handle or an http or https URL'),
  ],
  ['array body', [], bad('body must be a JSON object')],
  ['string body', '"hello"', bad('body must be a JSON object')],
  ['malformed JSON', '{"full_name": ', bad('body is not valid JSON')],
];

describe('POST /v1/contact', () => {
  const api = useTestApi({ credits: 1_000 });

  it.each(CASES)('%s', async (_, body, expected) => {
    const res = await postJson(api.app, '/v1/contact', api.key, body);
    expect(res.status).toBe(expected.status);
    if (expected.message) expect(res.body).toEqual({ code: expected.status, message: expected.message });
    else expect(res.body.contact).toMatchObject({ created: true, id: expect.any(String) });
  });

  it('splits full_name and moves a leading salutation', async () => {
    expect(splitFullName('Dr. Jane van der Berg')).toEqual({
      salutation: 'Dr.',
      first: 'Jane',
      last: 'van der Berg',
    });
    expect(splitFullName('Madonna')).toEqual({ salutation: null, first: 'Madonna', last: null });
    expect(splitFullName('Mr')).toEqual({ salutation: null, first: 'Mr', last: null });
    const res = await postJson(api.app, '/v1/contact', api.key, {
      full_name: 'Mrs  Emma   Peel',
      email: 'emma@example.com',
    });
    const row = await api.t.db
      .selectFrom('contacts')
      .select(['first_name', 'last_name', 'data'])
      .where('uid', '=', (res.body.contact as { id: string }).id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ first_name: 'Emma', last_name: 'Peel', data: { salutation: 'Mrs' } });
  });

  it('an email the account already has creates nothing and returns the existing id (also at once)', async () => {
    const first = await postJson(api.app, '/v1/contact', api.key, {
      full_name: 'Kim Lee',
      email: 'kim@example.com',
    });
    const id = (first.body.contact as { id: string }).id;
    const again = await postJson(api.app, '/v1/contact', api.key, {
      full_name: 'Kim Lee-Park',
      email: 'KIM@example.com',
    });
    expect(again.status).toBe(200);
    expect(again.body.contact).toEqual({ created: false, id });
    const racing = await Promise.all(
      Array.from({ length: 5 }, () =>
        postJson(api.app, '/v1/contact', api.key, { full_name: 'Max Roe', email: 'max@example.com' }),
      ),
    );
    const contacts = racing.map((r) => r.body.contact as { created: boolean; id: string });
    expect(contacts.filter((c) => c.created)).toHaveLength(1);
    expect(new Set(contacts.map((c) => c.id)).size).toBe(1);
  });

  it('contacts are private to their account: another account creates its own', async () => {
    const other = (await newAccount(api.t.db, 10)).api_key;
    const mine = await postJson(api.app, '/v1/contact', api.key, {
      full_name: 'Sam Poe',
      email: 'sam@example.com',
    });
    const theirs = await postJson(api.app, '/v1/contact', other, {
      full_name: 'Sam Poe',
      email: 'sam@example.com',
    });
    expect(theirs.body.contact).toMatchObject({ created: true });
    expect((theirs.body.contact as { id: string }).id).not.toBe((mine.body.contact as { id: string }).id);
  });

  it('a spent account gets 402 and creates nothing', async () => {
    const spent = (await newAccount(api.t.db, 1)).api_key;
    expect((await postJson(api.app, '/v1/contact', spent, { full_name: 'One Only' })).status).toBe(200);
    const refused = await postJson(api.app, '/v1/contact', spent, {
      full_name: 'Too Many',
      email: 'late@example.com',
    });
    expect(refused.body).toEqual({
      code: 402,
      message: 'Payment Required: Data credits exhausted for this period',
    });
    const stored = await api.t.db
      .selectFrom('contacts')
      .select('uid')
      .where('email_key', '=', 'late@example.com')
      .execute();
    expect(stored).toEqual([]);
  });

  it('refuses other content types (415) and bodies over 16 KiB (413)', async () => {
    const text = await api.app.inject({
      method: 'POST',
      url: `/v1/contact?api_key=${api.key}`,
      headers: { 'content-type': 'text/plain' },
      payload: 'full_name=A B',
    });
    expect(text.statusCode).toBe(415);
    expect(text.json()).toEqual({
      code: 415,
      message: 'Unsupported Media Type: Content-Type must be application/json',
    });
    const form = await api.app.inject({
      method: 'POST',
      url: `/v1/contact?api_key=${api.key}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'full_name=A+B',
    });
    expect(form.statusCode).toBe(415);
    const big = await postJson(api.app, '/v1/contact', api.key, {
      full_name: 'A B',
      line1: 'x'.repeat(17 * 1024),
    });
    expect(big).toMatchObject({
      status: 413,
      body: { code: 413, message: 'Payload Too Large: request body is too large' },
    });
  });
});
