import type { ExtraRequestInit, Settings } from 'meilisearch';
import {
  type EnqueuedTaskPromise,
  Meilisearch,
  MeilisearchApiError,
  MeilisearchError,
  type Task,
} from 'meilisearch';
import { Agent } from 'undici';
import { type Config, LOCAL_DEFAULTS } from '../shared/config.js';
import {
  ORG_INDEX_FORMAT,
  ORG_INDEX_PRIMARY_KEY,
  ORG_INDEX_SETTINGS,
  REQUIRED_FEATURES,
} from './index-definition.js';
import { V1_SEARCHABLE } from './legacy-v1/index-settings.js';

/**
 * Meilisearch clients with bounded requests. Queries get a short timeout so an unreachable or
 * stuck Meilisearch turns into a quick 503 instead of a hanging request; indexing gets a longer one
 * because a big document batch takes a while to upload.
 */
export interface MeiliConnection {
  url: string;
  apiKey: string | undefined;
}

export const QUERY_TIMEOUT_MS = 2_000;
export const INDEXING_TIMEOUT_MS = 60_000;

export function createMeiliClient(conn: MeiliConnection, timeoutMs = QUERY_TIMEOUT_MS): Meilisearch {
  return new Meilisearch({
    host: conn.url,
    ...(conn.apiKey ? { apiKey: conn.apiKey } : {}),
    timeout: timeoutMs,
    defaultWaitOptions: { timeout: 120_000, interval: 100 },
  });
}

/** Meilisearch could not be reached or did not answer in time (not: it answered with an error). */
export class SearchUnavailableError extends Error {
  override name = 'SearchUnavailableError';
}

/** True for errors that mean "Meilisearch is away or overloaded", as opposed to a bad request. */
export function isUnavailable(error: unknown): boolean {
  if (error instanceof SearchUnavailableError) return true;
  if (error instanceof MeilisearchApiError) return error.response.status >= 500;
  return error instanceof MeilisearchError;
}

/** Runs a Meilisearch call, turning connection failures and timeouts into SearchUnavailableError. */
export async function meiliCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (isUnavailable(error)) {
      throw new SearchUnavailableError(
        `search engine unavailable (${error instanceof Error ? error.message : String(error)})`,
        { cause: error },
      );
    }
    throw error;
  }
}

/**
 * Answers that can be larger than about 1 KB (more than ~40 ids) are asked for on a connection of
 * their own. Meilisearch writes such an answer in more than one piece, and on a kept-alive
 * connection the kernel's delayed acknowledgement then holds the rest for about 40 ms: a suspect
 * read of 96 ids took 44-52 ms with `processingTimeMs` 1, and 4-12 ms on a fresh connection, which
 * starts in quick-acknowledgement mode (docs/search.md). Pages of up to 40 ids keep the kept-alive
 * connections, so the extra connections (and their TIME_WAIT sockets) are only for the large reads;
 * search/org-search.ts chooses by the answer's estimated size (ids only, or with keys).
 */
export const LARGE_ANSWER = 40;
const freshConnections = new Agent({ pipelining: 0 });
/** Request options for a search whose answer can pass LARGE_ANSWER ids. */
export const LARGE_ANSWER_INIT = { dispatcher: freshConnections } as unknown as ExtraRequestInit;

export class MeiliTaskFailedError extends Error {
  override name = 'MeiliTaskFailedError';
}

/** Waits for an enqueued task and throws unless it succeeded: callers mark work done only after this. */
export async function succeeded(enqueued: EnqueuedTaskPromise, timeoutMs = 300_000): Promise<Task> {
  // Short tasks are polled often (a change should be searchable quickly); long ones (a rebuild's
  // settings, minutes) once a second: each poll leaves a listener on the wait's abort signal.
  const interval = timeoutMs > 300_000 ? 1_000 : 100;
  const task = await enqueued.waitTask({ timeout: timeoutMs, interval });
  if (task.status !== 'succeeded') {
    throw new MeiliTaskFailedError(
      `Meilisearch task ${task.uid} (${task.type}) ${task.status}: ${task.error?.message ?? 'no reason given'}`,
    );
  }
  return task;
}

export async function indexExists(client: Meilisearch, uid: string): Promise<boolean> {
  try {
    await client.getRawIndex(uid);
    return true;
  } catch (error) {
    if (error instanceof MeilisearchApiError && error.response.status === 404) return false;
    throw error;
  }
}

export type IndexFormat = 1 | 2 | 3 | 4 | 5 | typeof ORG_INDEX_FORMAT;

/** The document format of an existing index (by its searchable attribute), or null when it does not exist. */
export async function indexFormat(client: Meilisearch, uid: string): Promise<IndexFormat | null> {
  try {
    const index = client.index(uid);
    const [searchable, sortable] = await Promise.all([
      index.getSearchableAttributes(),
      index.getSortableAttributes(),
    ]);
    if (searchable.length === 1 && searchable[0] === V1_SEARCHABLE) return 1;
    if (sortable.includes('np')) return ORG_INDEX_FORMAT;
    if (sortable.includes('nb')) return sortable.includes('t') ? 4 : 5;
    return sortable.includes('t') ? 3 : 2;
  } catch (error) {
    if (error instanceof MeilisearchApiError && error.response.status === 404) return null;
    throw error;
  }
}

/**
 * Creates the index when missing and applies the declared settings (a no-op task when they are
 * already in place). Used at start-up for the live index and by reindex for each new index. An
 * index of an older format is left as it is: it keeps serving until `bizdir reindex` replaces it.
 */
export async function ensureOrgIndex(
  client: Meilisearch,
  uid: string,
  settings: Settings = ORG_INDEX_SETTINGS,
): Promise<IndexFormat> {
  await client.updateExperimentalFeatures(REQUIRED_FEATURES);
  if (!(await indexExists(client, uid))) {
    const task = await client.createIndex(uid, { primaryKey: ORG_INDEX_PRIMARY_KEY }).waitTask();
    // Two starters racing: the loser's creation fails with index_already_exists, which is fine.
    if (task.status === 'failed' && task.error?.code !== 'index_already_exists') {
      throw new MeiliTaskFailedError(`creating index ${uid} failed: ${task.error?.message}`);
    }
    await succeeded(client.index(uid).updateSettings(settings));
    return ORG_INDEX_FORMAT;
  }
  const format = await indexFormat(client, uid);
  if (format !== null && format !== ORG_INDEX_FORMAT) return format;
  // An existing index keeps the language its words were tokenized in: changing it makes
  // Meilisearch tokenize every document again in one task (minutes at 5.7M, with the sync queued
  // behind it). An index built before the language was declared gets it at `bizdir reindex`.
  const { localizedAttributes: _kept, ...rest } = settings;
  await succeeded(client.index(uid).updateSettings(rest));
  return ORG_INDEX_FORMAT;
}

/** Where Meilisearch is for this process: configured, else the local default. */
export function meiliConnectionOf(config: Pick<Config, 'meiliUrl' | 'meiliMasterKey'>): MeiliConnection {
  return { url: config.meiliUrl ?? LOCAL_DEFAULTS.meiliUrl, apiKey: config.meiliMasterKey };
}
