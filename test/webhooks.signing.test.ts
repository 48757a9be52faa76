import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { generateSecret, SECRET_PREFIX, signedHeaders } from '../webhooks/signing.js';

describe('webhook signing (Standard Webhooks)', () => {
  it('makes whsec_ secrets of at least 24 random bytes, each new', () => {
    const a = generateSecret();
    const b = generateSecret();
    expect(a.startsWith(SECRET_PREFIX)).toBe(true);
    expect(Buffer.from(a.slice(SECRET_PREFIX.length), 'base64').length).toBeGreaterThanOrEqual(24);
    expect(a).not.toBe(b);
  });

  it('signs so that the reference verifier accepts the request, and refuses it when anything changed', () => {
    const secret = generateSecret();
    const body = JSON.stringify({ id: '7-1', type: 'org.created', data: { version_number: 1 } });
    const now = Math.floor(Date.now() / 1000);
    const headers = signedHeaders([secret], 'msg_7-1', now, body);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
    expect(() => new Webhook(generateSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'msg_other' })).toThrow();
  });

  it('signs with both secrets during a rotation: a receiver holding either one accepts', () => {
    const [fresh, old] = [generateSecret(), generateSecret()];
    const body = '{"events":[]}';
    const headers = signedHeaders([fresh, old], 'msg_1-1_1-9', Math.floor(Date.now() / 1000), body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(fresh).verify(body, headers)).toEqual({ events: [] });
    expect(new Webhook(old).verify(body, headers)).toEqual({ events: [] });
    expect(() => new Webhook(generateSecret()).verify(body, headers)).toThrow();
  });
});
