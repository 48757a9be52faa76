import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../shared/config.js';

describe('configuration', () => {
  it('applies the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      domainSuffix: 'bizdir.test',
      host: '127.0.0.1',
      port: 3000,
      databaseUrl: undefined,
      redisUrl: undefined,
      meiliUrl: undefined,
      adminToken: undefined,
      meiliMaxIndexingMemory: '2 GiB',
      meiliMaxIndexingThreads: undefined,
      searchRebuildBacklog: 50_000,
      searchRebuildDuringImport: false,
      meiliReduceIndexingMemory: true,
      eventsRetentionDays: 45,
      webhooksAllowPrivate: false,
      webhooksMaxEndpoints: 16,
      webhooksConcurrency: 20,
    });
    expect(Object.isFrozen(c)).toBe(true);
    expect(loadConfig({ EVENTS_RETENTION_DAYS: '90' }).eventsRetentionDays).toBe(90);
    expect(loadConfig({ SEARCH_REBUILD_DURING_IMPORT: 'on' }).searchRebuildDuringImport).toBe(true);
    expect(loadConfig({ MEILI_MAX_INDEXING_MEMORY: '512MiB' }).meiliMaxIndexingMemory).toBe('512MiB');
    expect(loadConfig({ MEILI_MAX_INDEXING_THREADS: '2' }).meiliMaxIndexingThreads).toBe(2);
    expect(loadConfig({ WEBHOOKS_ALLOW_PRIVATE: 'on' }).webhooksAllowPrivate).toBe(true);
    expect(loadConfig({ WEBHOOKS_MAX_ENDPOINTS: '3' }).webhooksMaxEndpoints).toBe(3);
    expect(loadConfig({ WEBHOOKS_CONCURRENCY: '4' }).webhooksConcurrency).toBe(4);
    expect(
      loadConfig({ MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE: 'false' }).meiliReduceIndexingMemory,
    ).toBe(false);
  });

  it('reads every variable', () => {
    const c = loadConfig({
      DATABASE_URL: 'postgres://u@db:5432/x',
      REDIS_URL: 'redis://r:6379',
      MEILI_URL: 'http://m:7700',
      MEILI_MASTER_KEY: 'k',
      DOMAIN_SUFFIX: 'example.org',
      HOST: '0.0.0.0',
      PORT: '8080',
      ADMIN_TOKEN: 'a-long-admin-token-123',
    });
    expect(c).toMatchObject({
      databaseUrl: 'postgres://u@db:5432/x',
      port: 8080,
      domainSuffix: 'example.org',
    });
  });

  it('reads MEILI_URL as one Meilisearch or a list of replicas', () => {
    expect(loadConfig({ MEILI_URL: 'http://m:7700' })).toMatchObject({
      meiliUrl: 'http://m:7700',
      meiliUrls: ['http://m:7700'],
    });
    expect(loadConfig({ MEILI_URL: 'http://m1:7700, https://m2:7700' })).toMatchObject({
      meiliUrl: 'http://m1:7700',
      meiliUrls: ['http://m1:7700', 'https://m2:7700'],
    });
    expect(loadConfig({}).meiliUrls).toEqual([]);
  });

  it.each([
    ['MEILI_URL', 'http://m1:7700,http://m1:7700'],
    ['MEILI_URL', 'http://m1:7700,'],
    ['MEILI_URL', 'http://m1:7700,ftp://m2'],
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['DATABASE_URL', 'mysql://x'],
    ['REDIS_URL', 'http://x'],
    ['MEILI_URL', 'ftp://x'],
    ['DATABASE_URL', 'postgres://localhost:99999/x'],
    ['REDIS_URL', 'redis://[bad'],
    ['MEILI_URL', 'http://exa mple.com:7700'],
    ['DOMAIN_SUFFIX', 'Bizdir.TEST'],
    ['DOMAIN_SUFFIX', 'bad_suffix.test'],
    ['ADMIN_TOKEN', 'short'],
    ['LOG_LEVEL', 'loud'],
    ['MEILI_MAX_INDEXING_MEMORY', 'lots'],
    ['MEILI_MAX_INDEXING_MEMORY', '2 GiB; rm -rf /'],
    ['MEILI_MAX_INDEXING_THREADS', '0'],
    ['MEILI_MAX_INDEXING_THREADS', 'all'],
    ['MEILI_MAX_INDEXING_THREADS', '1.5'],
    ['MEILI_MAX_INDEXING_THREADS', '-2'],
    ['SEARCH_REBUILD_DURING_IMPORT', 'yes'],
    ['MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE', 'yes'],
    ['EVENTS_RETENTION_DAYS', '0'],
    ['EVENTS_RETENTION_DAYS', '45d'],
    ['EVENTS_RETENTION_DAYS', '4.5'],
    ['EVENTS_RETENTION_DAYS', '-1'],
    ['EVENTS_RETENTION_DAYS', '99999'],
    ['WEBHOOKS_ALLOW_PRIVATE', 'true'],
    ['WEBHOOKS_MAX_ENDPOINTS', '0'],
    ['WEBHOOKS_MAX_ENDPOINTS', 'many'],
    ['WEBHOOKS_CONCURRENCY', '0'],
  ])('refuses %s=%s with one message naming it', (variable, value) => {
    let caught: unknown;
    try {
      loadConfig({ [variable]: value });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe(variable);
    expect((caught as ConfigError).message).toMatch(new RegExp(`^Invalid configuration: ${variable} `));
  });
});
