import type { Meilisearch } from 'meilisearch';
import { afterAll, describe, expect, it } from 'vitest';
import { ContactBodySchema } from '../api/contacts/contact.schema.js';
import { ensureOrgIndex } from '../search/index-definition.js';
import { get, importOneOrg, postJson, SUFFIX, useTestApi } from './support/api.js';
import { testIndexName, testMeiliClient } from './support/meili.js';

/**
 * Text Postgres cannot store (a NUL, a lone UTF-16 surrogate) used to travel to the database and
 * come back as a 500. It is refused at the edge: 400 naming the field, nothing stored, no credit.
 */
let meili: Meilisearch;
let orgDomain: string;
const indexUid = testIndexName('unstorable');

const UNSTORABLE = 'must not contain NUL or unpaired surrogate characters';
const bad = (field: string) => ({ code: 400, message: `Bad Request: ${field} ${UNSTORABLE}` });

const contactCount = async () =>
  Number(
    (
      await api.t.db
        .selectFrom('contacts')
        .select((e) => e.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

const api = useTestApi({
  seed: async (t) => {
    orgDomain = await importOneOrg(t.db);
    meili = testMeiliClient();
    await ensureOrgIndex(meili, indexUid);
  },
  app: { meiliIndex: indexUid },
  credits: 1_000,
});

afterAll(async () => {
  await meili?.deleteIndexIfExists(indexUid);
});

describe('POST /v1/contact', () => {
  const textFields = Object.keys(ContactBodySchema.properties).filter(
    (f) => f !== 'email_opt_out' && f !== 'email',
  );

  it.each(textFields)('a NUL in %s is 400 naming the field, and stores nothing', async (field) => {
    const before = await contactCount();
    // Two characters, so fields limited to two (country_code, state_code) reach the check too.
    const body = { full_name: 'Ada Lovelace', [field]: 'A\u0000' };
    const res = await postJson(api.app, '/v1/contact', api.key, body);
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: bad(field) });
    expect(await contactCount()).toBe(before);
  });

  it.each([
    ['the report (city)', '{"full_name":"A B","city":"x\\u0000y"}', 'city'],
    ['a lone high surrogate', '{"full_name":"A \\ud800B"}', 'full_name'],
    ['a lone low surrogate', '{"first_name":"A","last_name":"\\udc00"}', 'last_name'],
    ['a reversed pair', '{"full_name":"A \\udc00\\ud800"}', 'full_name'],
  ])('%s is 400 naming the field', async (_label, json, field) => {
    const res = await postJson(api.app, '/v1/contact', api.key, json);
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: bad(field) });
  });

  it('a NUL in the email is 400 naming the email', async () => {
    const res = await postJson(api.app, '/v1/contact', api.key, {
      full_name: 'A B',
      email: 'a\u0000b@example.com',
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^Bad Request: email /);
  });

  it('characters outside the BMP (a well-formed pair) and other control characters are stored', async () => {
    const res = await postJson(api.app, '/v1/contact', api.key, {
      full_name: 'Zoë 😀 O\u0001Brien',
      city: '\u202eRTL',
    });
    expect(res.status).toBe(200);
    const row = await api.t.db
      .selectFrom('contacts')
      .select(['first_name', 'last_name'])
      .where('uid', '=', (res.body.contact as { id: string }).id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ first_name: 'Zoë', last_name: '😀 O\u0001Brien' });
  });
});

describe('query and path values', () => {
  it.each([
    ['/v1/org/search?q=a%00b', 'q'],
    ['/v1/org/search?q=%00', 'q'],
    [`/v1/org/search?q=x&sort=name%00`, 'sort'],
    [`/v1/org/a%00b.${SUFFIX}`, 'domain'],
    [`/v1/org/a%00b.${SUFFIX}/locations`, 'domain'],
    [`/v1/location/a%00b.loc.${SUFFIX}`, 'domain'],
  ])('%s is 400 naming %s', async (path, field) => {
    const res = await get(api.app, path, api.key);
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: bad(field) });
  });

  it('an Org is still found, and bad escapes in q are plain text', async () => {
    expect((await get(api.app, `/v1/org/${orgDomain}`, api.key)).status).toBe(200);
    for (const q of ['%ED%A0%80', '%C0%AF', '%', '%zz']) {
      const res = await get(api.app, `/v1/org/search?q=${q}`, api.key);
      expect(res.status).toBe(200);
    }
  });

  it('a NUL or a lone surrogate in the api_key is 403 (the key is checked first)', async () => {
    for (const apiKey of [
      `${api.key.slice(0, 10)}%00${api.key.slice(11)}`,
      `${api.key.slice(0, 10)}%ED%A0%80`,
    ]) {
      const res = await api.app.inject({ method: 'GET', url: `/v1/org/${orgDomain}?api_key=${apiKey}` });
      expect(res.json()).toEqual({ code: 403, message: 'Forbidden: Invalid api_key parameter value' });
    }
  });
});
