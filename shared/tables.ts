import type { ColumnType, Generated, GeneratedAlways } from 'kysely';
import type { AddressField, LinkKey, LocationContentField, PhoneKey } from './record-fields.js';

/**
 * Kysely table types. They match what `pg` returns with the type parsers set in db.ts:
 * int8 -> number (every bigint here stays far below 2^53), date -> 'YYYY-MM-DD' string,
 * timestamptz -> Date, jsonb -> parsed JSON.
 */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type DateString = ColumnType<string, string, string>;
/** jsonb: selected as parsed JSON, written as a JSON string; optional on insert (column default). */
type JsonWithDefault<T> = ColumnType<T, string | undefined, string>;
type Json<T> = ColumnType<T, string, string>;

export type PhonesJson = { [K in PhoneKey]?: string | null };

export interface HoursEntryJson {
  day?: number;
  date?: string;
  open: boolean;
  open_time: string;
  close_time: string;
}

export interface HoursJson {
  normal?: HoursEntryJson[] | null;
  special?: HoursEntryJson[] | null;
  message?: string | null;
  special_message?: string | null;
}

export type LinksJson = { [K in LinkKey]?: string | null };

/** The postal fields of an Address (record-fields.ts), as stored and as the API shows them. */
export type AddressFields = { [K in AddressField]: string | null };

/** No `uid` column since migration 0023: it is bizdir_uid(id) (SQL) or bizdirUid(id) (shared/domains.ts). */
export interface AddressesTable extends AddressFields {
  id: GeneratedAlways<number>;
  domain_cc: string;
  content_hash: string;
  version_number: Generated<number>;
  updated: Timestamp;
  created_at: Timestamp;
}

/** No `uid` column since migration 0023: it is bizdir_uid(id) (SQL) or bizdirUid(id) (shared/domains.ts). */
export interface OrgsTable {
  id: GeneratedAlways<number>;
  domain_cc: string;
  public_slug: string;
  name: string;
  informal_name: string | null;
  description: string | null;
  email: string | null;
  logo_url: string | null;
  phones: JsonWithDefault<PhonesJson>;
  sic_code: string | null;
  vat_number: string | null;
  registration_country: string | null;
  registration_number: string | null;
  registration_date: DateString | null;
  registration_state_code: string | null;
  registered_address_id: number | null;
  company_status: string | null;
  company_category: string | null;
  left_register_on: DateString | null;
  content_hash: string;
  version_number: Generated<number>;
  updated: Timestamp;
  created_at: Timestamp;
  last_run_id: number | null;
}

export interface OrgPublicDomainsTable {
  slug: string;
  org_id: number;
  created_at: Timestamp;
}

export interface LocationsTable {
  id: GeneratedAlways<number>;
  uid: GeneratedAlways<string>;
  domain_cc: string;
  public_slug: string;
  org_id: number;
  code: string;
  name: string | null;
  description: string | null;
  address_id: number | null;
  address_verified: Generated<boolean>;
  closed_date: DateString | null;
  is_default: Generated<boolean>;
  position: Generated<number>;
  email: string | null;
  phones: JsonWithDefault<PhonesJson>;
  hours: JsonWithDefault<HoursJson>;
  links: JsonWithDefault<LinksJson>;
  year_established: number | null;
  latitude: number | null;
  longitude: number | null;
  primary_category: string | null;
  categories: string[] | null;
  labels: string[] | null;
  logo_url: string | null;
  content_hash: string;
  /** The sheet row this Location was last written from or found unchanged by (see the loader). */
  source_fingerprint: string | null;
  version_number: Generated<number>;
  updated: Timestamp;
  created_at: Timestamp;
  last_run_id: number | null;
}

/** Every content field of record-fields.ts is a locations column (a compile-time check). */
type _LocationContentIsStored = Pick<LocationsTable, LocationContentField>;

/** The keys a run met but did not write (migration 0004), `org_id:code` for the location feed. */
export interface ImportRunKeysTable {
  run_id: number;
  key: string;
}

/** The first row of each Org in a `--full` location sheet, while the run lasts (migration 0006). */
export interface ImportRunFirstsTable {
  run_id: number;
  org_id: number;
  code: string;
  line: number;
}

export interface LocationPublicDomainsTable {
  slug: string;
  location_id: number;
  created_at: Timestamp;
}

export interface PublicSlugCountersTable {
  scope: string;
  base: string;
  last: number;
}

export type ImportFeed = 'registrar' | 'locations';
export type ImportStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'skipped';

/** What an import run counts of its rows: counter columns of import_runs (all but `closed` also of its parts). */
export const IMPORT_ROW_OUTCOMES = [
  'inserted',
  'updated',
  'unchanged',
  'rejected',
  'warnings',
  'duplicates',
  'closed',
] as const;
export type ImportRowOutcome = (typeof IMPORT_ROW_OUTCOMES)[number];

export interface ImportOptionsJson {
  country?: string;
  full?: boolean;
  org?: string;
  /**
   * Registrar `--full`: the most of the register a run may mark as gone, in percent (default
   * DEFAULT_MAX_GONE_PERCENT, ingest/full-guard.ts).
   */
  max_gone?: number;
}

export interface ImportRunsTable {
  id: GeneratedAlways<number>;
  feed: ImportFeed;
  source: string;
  options: JsonWithDefault<ImportOptionsJson>;
  status: Generated<ImportStatus>;
  job_id: string | null;
  schedule_name: string | null;
  rows_read: Generated<number>;
  inserted: Generated<number>;
  updated: Generated<number>;
  unchanged: Generated<number>;
  rejected: Generated<number>;
  warnings: Generated<number>;
  duplicates: Generated<number>;
  closed: Generated<number>;
  checkpoint_rows: Generated<number>;
  bytes_read: Generated<number>;
  bytes_total: number | null;
  error: string | null;
  created_at: Timestamp;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
}

export interface ImportRejectsTable {
  id: GeneratedAlways<number>;
  run_id: number;
  severity: 'rejected' | 'warning';
  line_number: number;
  column_name: string | null;
  reason: string;
  raw: string | null;
}

export interface Database {
  addresses: AddressesTable;
  orgs: OrgsTable;
  org_public_domains: OrgPublicDomainsTable;
  locations: LocationsTable;
  import_run_firsts: ImportRunFirstsTable;
  import_run_keys: ImportRunKeysTable;
  location_public_domains: LocationPublicDomainsTable;
  public_slug_counters: PublicSlugCountersTable;
  import_runs: ImportRunsTable;
  import_rejects: ImportRejectsTable;
}

// API: accounts, plans, keys, the usage ledger and private contacts (migration 0002_api).

export interface AccountsTable {
  id: GeneratedAlways<number>;
  uid: GeneratedAlways<string>;
  name: string;
  created_at: Timestamp;
  /** Rate limit (migration 0008): both set or both null (no limit). */
  rate_limit_requests: number | null;
  rate_limit_seconds: number | null;
}

export interface SubscriptionsTable {
  id: GeneratedAlways<number>;
  uid: GeneratedAlways<string>;
  account_id: number;
  credits: number;
  anchor_date: DateString;
  created_at: Timestamp;
}

export interface ApiKeysTable {
  id: GeneratedAlways<number>;
  account_id: number;
  prefix: string;
  hash: Buffer;
  created_at: Timestamp;
  revoked_at: Timestamp | null;
}

export interface UsagePeriodsTable {
  subscription_id: number;
  period_start: Timestamp;
  used: Generated<number>;
  updated_at: Timestamp;
}

export interface ContactsTable {
  id: GeneratedAlways<number>;
  uid: GeneratedAlways<string>;
  account_id: number;
  email_key: string | null;
  first_name: string | null;
  last_name: string | null;
  data: Json<Record<string, string | boolean | null>>;
  created_at: Timestamp;
}

export interface Database {
  accounts: AccountsTable;
  subscriptions: SubscriptionsTable;
  api_keys: ApiKeysTable;
  usage_periods: UsagePeriodsTable;
  contacts: ContactsTable;
}

// Operations: recurring imports (migration 0005_schedules).

export interface ImportSchedulesTable {
  name: string;
  /** Null for a job other than `import` (migration 0027). */
  feed: ImportFeed | null;
  cron: string;
  tz: Generated<string>;
  // jsonb: read as the parsed object, written as its JSON text (optional, the column has a default).
  options: ColumnType<ImportOptionsJson, string | undefined, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Columns 0005_schedules adds to import_runs (declaration merging keeps the original block untouched). */
export interface ImportRunsTable {
  source_fingerprint: string | null;
  scheduled_for: Timestamp | null;
}

export interface Database {
  import_schedules: ImportSchedulesTable;
}

// Search index sync (migration 0003_search).

/** bigint[] comes back from pg as strings (no array parser is set for int8[]); callers map Number. */
type BigintIds = ColumnType<string[], number[], number[]>;

export interface SearchOutboxTable {
  seq: GeneratedAlways<number>;
  org_ids: BigintIds;
  created_at: Timestamp;
  /** cardinality(org_ids), stored (migration 0019_outbox_id_count). */
  id_count: GeneratedAlways<number>;
}

export interface SearchReindexTable {
  target: string;
  started_at: Timestamp;
  /** The replica whose index is rebuilt ('' with one Meilisearch; migration 0030_search_replicas). */
  replica: Generated<string>;
}

export interface SearchReindexReplayTable {
  target: string;
  org_ids: BigintIds;
}

/** Migration 0030_search_replicas: the Meilisearch replicas, while more than one is configured. */
export interface SearchReplicasTable {
  name: string;
  added_at: Generated<Timestamp>;
}

/** The outbox rows a replica has not confirmed yet (written by a trigger on search_outbox). */
export interface SearchReplicaPendingTable {
  replica: string;
  seq: number;
}

export interface Database {
  search_outbox: SearchOutboxTable;
  search_replicas: SearchReplicasTable;
  search_replica_pending: SearchReplicaPendingTable;
  search_reindex: SearchReindexTable;
  search_reindex_replay: SearchReindexReplayTable;
}

/** Migration 0007_import_parts: the sources of a run, read in parallel, each with its checkpoint. */
export type ImportPartStatus = 'queued' | 'running' | 'succeeded' | 'failed';

export interface ImportRunPartsTable {
  id: GeneratedAlways<number>;
  run_id: number;
  part_no: number;
  source: string;
  entry: string | null;
  status: Generated<ImportPartStatus>;
  job_id: string | null;
  rows_read: Generated<number>;
  accepted: Generated<number>;
  rejected: Generated<number>;
  warnings: Generated<number>;
  inserted: Generated<number>;
  updated: Generated<number>;
  unchanged: Generated<number>;
  checkpoint_rows: Generated<number>;
  bytes_read: Generated<number>;
  bytes_total: number | null;
  error: string | null;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
}

export interface ImportRunsTable {
  merge_after: string | null;
  merged_rows: Generated<number>;
  parts: Generated<number>;
}

export interface ImportRejectsTable {
  part_no: Generated<number>;
}

export interface Database {
  import_run_parts: ImportRunPartsTable;
}

/** Migration 0011_org_source_fingerprint. */
export interface OrgsTable {
  source_fingerprint: string | null;
}

/**
 * Migration 0024_import_rejects_record_key: the key a rejected row names when it can be read (the
 * register: its company number), so a `--full` run counts that record as present.
 */
export interface ImportRejectsTable {
  record_key: Generated<string | null>;
}

/**
 * Migration 0027_schedule_sources: a schedule's sources (templates of the date, as written) and what
 * it runs; the firings of reindex schedules; the index's size right after each build.
 */
export type ScheduleJob = 'import' | 'reindex' | 'reindex-verify';
export type ReindexRunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'skipped';

export interface ImportSchedulesTable {
  sources: ColumnType<string[], string[], string[]>;
  job: Generated<ScheduleJob>;
  when_grown: number | null;
}

export interface ScheduleReindexRunsTable {
  id: GeneratedAlways<number>;
  schedule_name: string;
  scheduled_for: Timestamp;
  job: Exclude<ScheduleJob, 'import'>;
  status: Generated<ReindexRunStatus>;
  job_id: string | null;
  reason: string | null;
  result: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
}

export interface IndexBuildSizesTable {
  id: GeneratedAlways<number>;
  index_uid: string;
  documents: number;
  bytes: number;
  measured_at: Timestamp;
}

export interface Database {
  schedule_reindex_runs: ScheduleReindexRunsTable;
  index_build_sizes: IndexBuildSizesTable;
}

/**
 * Migration 0025_events: the change feed, written only by triggers (records created, version bumps,
 * Orgs leaving the register, Locations closing; import runs starting and settling) and deleted only
 * by retention (events/retention.repository.ts). `data` is the stored form the read model renders (events/feed.read-model.ts).
 * xid8 comes back from pg as its decimal text.
 */
export interface EventsTable {
  xid: Generated<string>;
  seq: GeneratedAlways<number>;
  type: string;
  created: Timestamp;
  org_id: number | null;
  run_id: number | null;
  data: Json<Record<string, unknown>>;
}

/** Where retention got to: the last event it deleted, in feed order (one row). */
export interface EventsRetentionTable {
  only_row: Generated<boolean>;
  deleted_xid: Generated<string>;
  deleted_seq: Generated<number>;
  pruned_at: Timestamp | null;
}

export interface Database {
  events: EventsTable;
  events_retention: EventsRetentionTable;
}

// Webhooks (migration 0028_webhooks).

/** An account's webhook endpoint; written only by api/webhooks/webhook-endpoint.repository.ts. */
export interface WebhookEndpointsTable {
  id: GeneratedAlways<number>;
  uid: GeneratedAlways<string>;
  account_id: number;
  url: string;
  /** Event types and patterns as given (`org.*`, `location.closed`, `*`). */
  types: string[];
  batch: Generated<boolean>;
  /** `whsec_…`, kept as issued: signing needs it; never shown after creation or rotation. */
  secret: string;
  previous_secret: string | null;
  previous_secret_until: Timestamp | null;
  created_at: Timestamp;
}

export type WebhookStatus = 'active' | 'failing' | 'disabled';

/** Delivery state per endpoint; written only by webhooks/delivery.repository.ts. */
export interface WebhookDeliveriesTable {
  endpoint_id: number;
  status: Generated<WebhookStatus>;
  disabled_reason: string | null;
  /** The endpoint's cursor: the last event delivered or passed over; null: from the oldest retained. */
  after_event: string | null;
  /** While a request is retried: the last event it carries. */
  pending_last: string | null;
  /** A replay asked by time, not yet turned into cursors by a worker. */
  replay_from: Timestamp | null;
  replay_to: Timestamp | null;
  /** During a replay with an end: the cursor it ends at, and where delivery goes on from then. */
  replay_until: string | null;
  replay_resume: string | null;
  failures: Generated<number>;
  failing_since: Timestamp | null;
  next_attempt_at: Timestamp | null;
  last_error: string | null;
  last_success_at: Timestamp | null;
  lease_token: string | null;
  lease_until: Timestamp | null;
  updated_at: Timestamp;
}

/** One request made to a receiver; written only by webhooks/delivery.repository.ts. */
export interface WebhookAttemptsTable {
  id: GeneratedAlways<number>;
  endpoint_id: number;
  webhook_id: string;
  event_ids: string[];
  attempted_at: Timestamp;
  /** The answer's HTTP status; null when there was none. */
  status: number | null;
  error: string | null;
  duration_ms: number;
  next_attempt_at: Timestamp | null;
}

export interface Database {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}
