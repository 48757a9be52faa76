import { describe, expect, it } from 'vitest';
import { prng } from '../bench/org-names.js';
import { encodeFolded, encodeQuery, foldName, MAX_SUFFIX_BYTES, nameKeys } from '../search/org-document.js';

const ALPHABET = [
  'a',
  'b',
  'z',
  '0',
  ' ',
  '^',
  '&',
  "'",
  '"',
  '\\',
  '.',
  '-',
  'é',
  'e',
  'É',
  '\t',
  'ß',
  '中',
  's',
  'x',
  ';',
];

describe('search encoding', () => {
  it('uses only [a-z0-9] and escapes, so Meilisearch cannot trim, fold or mis-parse a value', () => {
    expect(encodeFolded(foldName(`Café "O'Neill" & Co.\t中^`))).toMatch(/^[a-z0-9^;]+$/);
  });

  it('is a prefix code: encoded q starts an encoded text exactly when q starts the text', () => {
    const rand = prng(7);
    const word = (n: number) =>
      Array.from({ length: n }, () => ALPHABET[Math.floor(rand() * ALPHABET.length)]!).join('');
    for (let i = 0; i < 5_000; i++) {
      const text = foldName(word(1 + Math.floor(rand() * 8)));
      const q = foldName(
        rand() < 0.5 ? text.slice(0, Math.floor(rand() * text.length) + 1) : word(1 + Math.floor(rand() * 3)),
      );
      expect(encodeFolded(text).startsWith(encodeFolded(q))).toBe(text.startsWith(q));
    }
  });

  it('indexes every suffix, and word-start suffixes separately', () => {
    const keys = nameKeys('ACME WIDGETS');
    expect(keys.sortName).toBe('acme widgets');
    expect(keys.full).toBe('acme^swidgets');
    expect(keys.suffixes).toHaveLength('acme widgets'.length);
    expect(keys.suffixes).toContain('e^swidgets');
    expect(keys.wordStarts).toEqual(['widgets']);
  });

  it('keeps accents and folds case only', () => {
    expect(foldName('WIDGÉTRY')).toBe('widgétry');
    expect(encodeQuery('widget')).not.toBe(encodeQuery('widgé'));
    expect(encodeQuery('CAFÉ')).toBe(encodeQuery('café'));
  });

  it('caps suffixes at MAX_SUFFIX_BYTES and refuses queries longer than any suffix', () => {
    const keys = nameKeys('中'.repeat(200));
    expect(Math.max(...keys.suffixes.map((s) => Buffer.byteLength(s)))).toBeLessThanOrEqual(MAX_SUFFIX_BYTES);
    expect(encodeQuery('中'.repeat(100))).toBeNull();
    expect(encodeQuery('a'.repeat(200))).toBe('a'.repeat(200));
  });
});
