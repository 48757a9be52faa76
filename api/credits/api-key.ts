import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API keys: `bzk_` + 43 base64url characters (256 random bits). The first 8 characters after `bzk_`
 * are the public prefix: the row is found by it and the key is revoked by it; only a SHA-256 hash of
 * the whole key is stored, and it is compared in constant time.
 */
const KEY_PATTERN = /^bzk_[A-Za-z0-9_-]{43}$/;
const PREFIX_LENGTH = 4 + 8;

export interface NewApiKey {
  key: string;
  prefix: string;
  hash: Buffer;
}

export function generateApiKey(): NewApiKey {
  const key = `bzk_${randomBytes(32).toString('base64url')}`;
  return { key, prefix: key.slice(0, PREFIX_LENGTH), hash: hashApiKey(key) };
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** The prefix a presented key would be stored under, or null when it cannot be a key of ours. */
export function apiKeyPrefix(key: string): string | null {
  return KEY_PATTERN.test(key) ? key.slice(0, PREFIX_LENGTH) : null;
}

export function hashesEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
