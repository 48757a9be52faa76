import type { Db } from '../../shared/db.js';
import { forbidden } from '../../shared/errors.js';
import { apiKeyPrefix, hashApiKey, hashesEqual } from './api-key.js';
import { findLiveKeyByPrefix, type KeyPrincipal } from './api-key.repository.js';

const MAX_CACHED = 10_000;

/**
 * Turns a presented `api_key` into the account and plan it pays with. Known keys are cached in the
 * process for a short while (the plan rarely changes); revocation still takes effect at once, because
 * every metered request also checks the key's liveness mark in Redis (see RedisCounters).
 */
export class KeyAuthenticator {
  private readonly cache = new Map<string, { principal: KeyPrincipal; expires: number }>();

  constructor(
    private readonly db: Db,
    private readonly ttlMs = 60_000,
  ) {}

  async authenticate(apiKey: string | undefined): Promise<KeyPrincipal> {
    const prefix = apiKey ? apiKeyPrefix(apiKey) : null;
    if (!apiKey || !prefix) throw forbidden();
    const hash = hashApiKey(apiKey);
    const cacheKey = hash.toString('base64');
    const hit = this.cache.get(cacheKey);
    if (hit && hit.expires > Date.now()) return hit.principal;

    const principal = await findLiveKeyByPrefix(this.db, prefix);
    // The prefix only finds the row; the secret is the whole key, compared in constant time.
    if (!principal || !hashesEqual(principal.hash, hash)) throw forbidden();
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    this.cache.set(cacheKey, { principal, expires: Date.now() + this.ttlMs });
    return principal;
  }

  forget(keyId: number): void {
    for (const [k, v] of this.cache) if (v.principal.keyId === keyId) this.cache.delete(k);
  }
}
