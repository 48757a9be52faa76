import { describe, expect, it } from 'vitest';
import { parseDomain, slugify, slugWithClash } from '../shared/domains.js';

describe('slugify', () => {
  it.each([
    ['ACME WIDGETS LTD', 'acme-widgets-ltd'],
    ['CAFÉ ÉCLAIR LIMITED', 'cafe-eclair-limited'],
    ['MÜLLER & SÖHNE GMBH', 'muller-sohne-gmbh'],
    ['STRAßE PLC', 'strasse-plc'],
    ['O’NEILL’S BAR LTD', 'o-neill-s-bar-ltd'],
    ['!NSPIRE LTD', 'nspire-ltd'],
    ['"QUOTED" NAME LTD', 'quoted-name-ltd'],
    ['1ST CHOICE LTD.', '1st-choice-ltd'],
    ['---', 'org'],
  ])('%s -> %s', (name, slug) => {
    expect(slugify(name)).toBe(slug);
  });

  it('keeps labels DNS-safe and leaves room for a clash suffix', () => {
    const slug = slugify(`${'A'.repeat(40)} ${'B'.repeat(40)}`);
    expect(slug.length).toBeLessThanOrEqual(56);
    expect(slug).toMatch(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/);
    expect(slugWithClash(slug, 999999).length).toBeLessThanOrEqual(63);
  });

  it('gives ASCII text (its quick path) the slug the full folding gives it', () => {
    // A combining mark after the text sends it down the full path (decompose, drop marks, fold) and
    // leaves the same characters: both paths must agree on every ASCII character and on case.
    const every = Array.from({ length: 128 }, (_, c) => String.fromCharCode(c)).join('');
    const names = [
      'ACME WIDGETS LTD',
      'acme widgets ltd',
      'Mc&Co (UK) Ltd.',
      ' \t leading and trailing \n',
      every,
      `${every.slice(64)}${every.slice(0, 64)}`,
      'Z'.repeat(90),
      '',
    ];
    for (const name of names) {
      expect(slugify(name, 'x'), JSON.stringify(name)).toBe(slugify(`${name}\u0301`, 'x'));
    }
    expect(slugify(every)).toBe('0123456789-abcdefghijklmnopqrstuvwxyz-abcdefghijklmnopqr');
  });

  it('numbers clashes from 2', () => {
    expect(slugWithClash('acme', 1)).toBe('acme');
    expect(slugWithClash('acme', 2)).toBe('acme-2');
  });
});

describe('parseDomain', () => {
  const s = 'bizdir.test';
  it.each([
    ['abc123de.gb.bizdir.test', { kind: 'org', uid: 'abc123de', cc: 'gb' }],
    ['ABC123DE.GB.BIZDIR.TEST', { kind: 'org', uid: 'abc123de', cc: 'gb' }],
    ['acme-widgets-ltd.bizdir.test', { kind: 'org-public', slug: 'acme-widgets-ltd' }],
    ['abc123de.loc.gb.bizdir.test', { kind: 'location', uid: 'abc123de', cc: 'gb' }],
    ['acme-whitby.loc.bizdir.test', { kind: 'location-public', slug: 'acme-whitby' }],
    ['abc123de.a.gb.bizdir.test', { kind: 'address', uid: 'abc123de', cc: 'gb' }],
  ])('%s', (domain, ref) => {
    expect(parseDomain(domain, s)).toEqual(ref);
  });

  it.each([
    'acme.example.com',
    'bizdir.test',
    '.bizdir.test',
    'a..b.bizdir.test',
    'abc.g1.bizdir.test',
    '-acme.bizdir.test',
    'a_b.bizdir.test',
    'x.y.z.w.bizdir.test',
    'acmebizdir.test',
  ])('refuses %s', (domain) => {
    expect(parseDomain(domain, s)).toBeNull();
  });
});
