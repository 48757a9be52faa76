import Type, { type Static } from 'typebox';
import Value from 'typebox/value';

/**
 * Configuration is read from the environment once, validated against one schema, and frozen.
 * A bad value stops start-up with one message naming the variable (docs/decisions.md, Configuration).
 */
const Env = Type.Object({
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  /** One Meilisearch, or several replicas of the same index separated by commas (docs/scaling.md). */
  MEILI_URL: Type.Optional(Type.String({ pattern: '^https?://[^,\\s]+(\\s*,\\s*https?://[^,\\s]+)*$' })),
  MEILI_MASTER_KEY: Type.Optional(Type.String({ minLength: 1 })),
  DOMAIN_SUFFIX: Type.String({
    pattern: '^(?=.{1,200}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$',
  }),
  HOST: Type.String({ minLength: 1 }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535 }),
  ADMIN_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  // Written out, not mapped from a list: a mapped list types as never (Config['logLevel']).
  LOG_LEVEL: Type.Union([
    Type.Literal('fatal'),
    Type.Literal('error'),
    Type.Literal('warn'),
    Type.Literal('info'),
    Type.Literal('debug'),
    Type.Literal('trace'),
    Type.Literal('silent'),
  ]),
  /** Log lines as JSON, or human-readable (pino-pretty); `auto`: human on a terminal, JSON otherwise. */
  LOG_FORMAT: Type.Union([Type.Literal('auto'), Type.Literal('json'), Type.Literal('pretty')]),
  /** Prefix of every BullMQ key; tests use their own so they never touch a user's queues. */
  QUEUE_PREFIX: Type.String({ pattern: '^[A-Za-z0-9_:-]{1,64}$' }),
  /** Name of the Meilisearch index alias that serves Org search; tests use their own. */
  MEILI_INDEX: Type.String({ pattern: '^[A-Za-z0-9_-]{1,200}$' }),
  /** Folder for local state (embedded services, downloaded feeds). */
  DATA_DIR: Type.String({ minLength: 1 }),
  /** The API's in-memory cache of rendered Orgs and Locations (api/records/record-cache.ts). */
  RECORD_CACHE: Type.Union([Type.Literal('on'), Type.Literal('off')]),
  /** Search answers kept in the record cache too, while no record changes (api/search/search.routes.ts). */
  SEARCH_ANSWER_CACHE: Type.Union([Type.Literal('on'), Type.Literal('off')]),
  /**
   * Imports use a second core: register batches are prepared on a worker thread, location batches
   * load two transactions at once (docs/imports.md); faster on a quiet machine, so on
   * (docs/journal/2026-11-25.md, 09:23).
   */
  IMPORT_PIPELINE: Type.Union([Type.Literal('on'), Type.Literal('off')]),
  /** Memory the embedded Meilisearch may use for indexing (its --max-indexing-memory). */
  MEILI_MAX_INDEXING_MEMORY: Type.String({ pattern: '^[0-9]+(\\.[0-9]+)? ?(B|[KMGT]i?B|[KMGT]b)$' }),
  /**
   * Threads the embedded Meilisearch indexes with (its --max-indexing-threads); unset, Meilisearch's
   * own default, half the machine's cores. A second thread on 2 cores builds faster but takes the
   * core the API answers on, so searches slow down during a rebuild (docs/search.md, Meilisearch
   * memory and disk).
   */
  MEILI_MAX_INDEXING_THREADS: Type.Optional(Type.Integer({ minimum: 1, maximum: 1024 })),
  /**
   * LMDB's write map for the embedded Meilisearch (its own variable, passed on as read): a write's
   * dirty pages stay page cache the kernel can reclaim, not heap memory. It is what lets Meilisearch
   * build and serve the register under a memory limit (docs/search.md, Meilisearch memory and disk).
   */
  MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE: Type.Union([Type.Literal('true'), Type.Literal('false')]),
  /**
   * Meilisearch's database folder (its --db-path) as this process sees it, for a reindex schedule
   * with `--when-grown`, which measures the index's files (jobs/schedules/index-growth.ts). Unset:
   * the embedded Meilisearch's, `<DATA_DIR>/meilisearch/data.ms`.
   */
  MEILI_DB_PATH: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * Org changes behind (and at least 30 % of the index) at which the indexer rebuilds the search
   * index and swaps it in instead of syncing the backlog (search/catch-up.ts); 0: always sync.
   */
  SEARCH_REBUILD_BACKLOG: Type.Integer({ minimum: 0 }),
  /**
   * on: a backlog that size is rebuilt while the import that makes it still runs, the new index
   * following the import's commits (search/catch-up.ts); off (default): the rebuild waits for the
   * import. On a 2-core machine `on` gained nothing and made the import itself slower
   * (docs/search.md): it is for Meilisearch on cores of its own.
   */
  SEARCH_REBUILD_DURING_IMPORT: Type.Union([Type.Literal('on'), Type.Literal('off')]),
  /**
   * Days the change feed keeps an event (docs/events.md); older ones are deleted by the workers'
   * hourly `prune-events` job, and a cursor older than what is kept answers 410. Longer than a
   * monthly import cycle by default, so a consumer that reads once a month misses nothing.
   */
  EVENTS_RETENTION_DAYS: Type.Integer({ minimum: 1, maximum: 3650 }),
  /**
   * on: webhook receivers may be on loopback, private, link-local or unique-local addresses and use
   * plain http:// (tests, on-premises receivers); off (default): https:// to public addresses only.
   * Cloud-metadata addresses are refused either way (webhooks/address-guard.ts).
   */
  WEBHOOKS_ALLOW_PRIVATE: Type.Union([Type.Literal('on'), Type.Literal('off')]),
  /** Webhook endpoints one account may have at once (a create past it is a 400). */
  WEBHOOKS_MAX_ENDPOINTS: Type.Integer({ minimum: 1, maximum: 1000 }),
  /** Endpoints a worker delivers to at once (each one request at a time, in order). */
  WEBHOOKS_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000 }),
});

const DEFAULTS = {
  DOMAIN_SUFFIX: 'bizdir.test',
  HOST: '127.0.0.1',
  PORT: '3000',
  LOG_LEVEL: 'info',
  LOG_FORMAT: 'auto',
  QUEUE_PREFIX: 'bizdir',
  MEILI_INDEX: 'orgs',
  DATA_DIR: '.data',
  RECORD_CACHE: 'on',
  SEARCH_ANSWER_CACHE: 'off',
  IMPORT_PIPELINE: 'on',
  MEILI_MAX_INDEXING_MEMORY: '2 GiB',
  MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE: 'true',
  SEARCH_REBUILD_BACKLOG: '50000',
  SEARCH_REBUILD_DURING_IMPORT: 'off',
  EVENTS_RETENTION_DAYS: '45',
  WEBHOOKS_ALLOW_PRIVATE: 'off',
  WEBHOOKS_MAX_ENDPOINTS: '16',
  WEBHOOKS_CONCURRENCY: '20',
} as const;

const MESSAGES: Record<string, string> = {
  DATABASE_URL: 'must be a postgres:// or postgresql:// URL',
  REDIS_URL: 'must be a redis:// or rediss:// URL',
  MEILI_URL: 'must be an http:// or https:// URL, or several separated by commas',
  MEILI_MASTER_KEY: 'must not be empty when set',
  DOMAIN_SUFFIX: 'must be a lower-case DNS name such as bizdir.test',
  HOST: 'must not be empty',
  PORT: 'must be an integer from 0 to 65535',
  ADMIN_TOKEN: 'must be at least 16 characters when set',
  LOG_LEVEL: 'must be one of fatal, error, warn, info, debug, trace, silent',
  LOG_FORMAT: 'must be one of auto, json, pretty',
  QUEUE_PREFIX: 'must be 1-64 characters of letters, digits, _ : -',
  MEILI_INDEX: 'must be 1-200 characters of letters, digits, _ -',
  DATA_DIR: 'must not be empty',
  RECORD_CACHE: 'must be on or off',
  SEARCH_ANSWER_CACHE: 'must be on or off',
  IMPORT_PIPELINE: 'must be on or off',
  MEILI_MAX_INDEXING_MEMORY: 'must be a size such as 2 GiB or 512 MiB',
  MEILI_MAX_INDEXING_THREADS: 'must be a whole number of threads from 1 to 1024 (unset: half the cores)',
  MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE: 'must be true or false',
  SEARCH_REBUILD_BACKLOG: 'must be a whole number of Orgs (0: never rebuild, always sync)',
  SEARCH_REBUILD_DURING_IMPORT: 'must be on or off',
  EVENTS_RETENTION_DAYS: 'must be a whole number of days from 1 to 3650',
  WEBHOOKS_ALLOW_PRIVATE: 'must be on or off',
  WEBHOOKS_MAX_ENDPOINTS: 'must be a whole number of endpoints from 1 to 1000',
  WEBHOOKS_CONCURRENCY: 'must be a whole number of endpoints from 1 to 1000',
};

type EnvValues = Static<typeof Env>;

/** Variables read as whole numbers (anything else fails validation with the variable's message). */
const NUMERIC = new Set([
  'PORT',
  'SEARCH_REBUILD_BACKLOG',
  'MEILI_MAX_INDEXING_THREADS',
  'EVENTS_RETENTION_DAYS',
  'WEBHOOKS_MAX_ENDPOINTS',
  'WEBHOOKS_CONCURRENCY',
]);

export interface Config {
  readonly databaseUrl: string | undefined;
  readonly redisUrl: string | undefined;
  /** The first (or only) Meilisearch of MEILI_URL. */
  readonly meiliUrl: string | undefined;
  /** Every Meilisearch replica MEILI_URL names, in its order (empty when unset). */
  readonly meiliUrls: readonly string[];
  readonly meiliMasterKey: string | undefined;
  readonly domainSuffix: string;
  readonly host: string;
  readonly port: number;
  readonly adminToken: string | undefined;
  readonly logLevel: EnvValues['LOG_LEVEL'];
  readonly logFormat: EnvValues['LOG_FORMAT'];
  readonly queuePrefix: string;
  readonly meiliIndex: string;
  readonly dataDir: string;
  readonly recordCache: boolean;
  /** SEARCH_ANSWER_CACHE=on (and RECORD_CACHE=on): repeated searches answered from the record cache. */
  readonly searchAnswerCache: boolean;
  /** IMPORT_PIPELINE=on. */
  readonly importPipeline: boolean;
  readonly meiliMaxIndexingMemory: string;
  /** MEILI_MAX_INDEXING_THREADS; undefined: Meilisearch's default (half the cores). */
  readonly meiliMaxIndexingThreads: number | undefined;
  /** MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE=true (the embedded Meilisearch's write map). */
  readonly meiliReduceIndexingMemory: boolean;
  /** MEILI_DB_PATH; undefined: the embedded Meilisearch's folder under DATA_DIR. */
  readonly meiliDbPath: string | undefined;
  /** SEARCH_REBUILD_BACKLOG: see search/catch-up.ts. */
  readonly searchRebuildBacklog: number;
  /** SEARCH_REBUILD_DURING_IMPORT=on. */
  readonly searchRebuildDuringImport: boolean;
  /** EVENTS_RETENTION_DAYS: how long the change feed keeps an event. */
  readonly eventsRetentionDays: number;
  /** WEBHOOKS_ALLOW_PRIVATE=on: receivers on private addresses and plain http:// are allowed. */
  readonly webhooksAllowPrivate: boolean;
  readonly webhooksMaxEndpoints: number;
  readonly webhooksConcurrency: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`Invalid configuration: ${variable} ${reason}`);
  }
}

/** Reads and validates configuration. Throws ConfigError naming the first bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(Env.properties)) {
    const value = env[key] ?? DEFAULTS[key as keyof typeof DEFAULTS];
    // An empty variable is treated as unset, as shells and compose files often leave them so.
    if (value === undefined || value === '') continue;
    raw[key] = NUMERIC.has(key) && /^\d+$/.test(value) ? Number(value) : value;
  }
  for (const error of Value.Errors(Env, raw)) {
    const variable =
      error.instancePath.replace(/^\//, '') || String(Object.values(error.params)[0] ?? 'environment');
    throw new ConfigError(variable, MESSAGES[variable] ?? error.message);
  }
  // The scheme is checked above; the rest of a URL must parse too (a port over 65535, a bad host),
  // or the first client to use it fails with a bare "Invalid URL" that names nothing.
  for (const variable of ['DATABASE_URL', 'REDIS_URL', 'MEILI_URL'] as const) {
    const value = raw[variable];
    if (typeof value === 'string' && !listOf(value).every((url) => URL.canParse(url)))
      throw new ConfigError(variable, `${MESSAGES[variable]} (this one does not parse)`);
  }
  const v = raw as EnvValues;
  const meiliUrls = v.MEILI_URL === undefined ? [] : listOf(v.MEILI_URL);
  if (new Set(meiliUrls).size !== meiliUrls.length)
    throw new ConfigError('MEILI_URL', 'names a replica twice');
  return Object.freeze({
    databaseUrl: v.DATABASE_URL,
    redisUrl: v.REDIS_URL,
    meiliUrl: meiliUrls[0],
    meiliUrls: Object.freeze(meiliUrls),
    meiliMasterKey: v.MEILI_MASTER_KEY,
    domainSuffix: v.DOMAIN_SUFFIX,
    host: v.HOST,
    port: v.PORT,
    adminToken: v.ADMIN_TOKEN,
    logLevel: v.LOG_LEVEL,
    logFormat: v.LOG_FORMAT,
    queuePrefix: v.QUEUE_PREFIX,
    meiliIndex: v.MEILI_INDEX,
    dataDir: v.DATA_DIR,
    recordCache: v.RECORD_CACHE === 'on',
    searchAnswerCache: v.SEARCH_ANSWER_CACHE === 'on',
    importPipeline: v.IMPORT_PIPELINE === 'on',
    meiliMaxIndexingMemory: v.MEILI_MAX_INDEXING_MEMORY,
    meiliMaxIndexingThreads: v.MEILI_MAX_INDEXING_THREADS,
    meiliReduceIndexingMemory: v.MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE === 'true',
    meiliDbPath: v.MEILI_DB_PATH,
    searchRebuildBacklog: v.SEARCH_REBUILD_BACKLOG,
    searchRebuildDuringImport: v.SEARCH_REBUILD_DURING_IMPORT === 'on',
    eventsRetentionDays: v.EVENTS_RETENTION_DAYS,
    webhooksAllowPrivate: v.WEBHOOKS_ALLOW_PRIVATE === 'on',
    webhooksMaxEndpoints: v.WEBHOOKS_MAX_ENDPOINTS,
    webhooksConcurrency: v.WEBHOOKS_CONCURRENCY,
  });
}

/** A comma-separated list's items, trimmed (a single URL is a list of one). */
const listOf = (value: string) => value.split(',').map((item) => item.trim());

/** The default local services, used where a URL is not configured and nothing embedded runs. */
export const LOCAL_DEFAULTS = {
  databaseUrl: 'postgres://postgres@127.0.0.1:5432/bizdir',
  redisUrl: 'redis://127.0.0.1:6379',
  meiliUrl: 'http://127.0.0.1:7700',
} as const;
