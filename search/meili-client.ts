import { Readable } from 'node:stream';
import type { SearchParams, SearchResponse, WaitOptions } from 'meilisearch';
import {
  type EnqueuedTaskPromise,
  Meilisearch,
  MeilisearchApiError,
  MeilisearchError,
  MeilisearchRequestError,
  type Task,
} from 'meilisearch';
import { Pool, request } from 'undici';
import { type Config, LOCAL_DEFAULTS } from '../shared/config.js';

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

/**
 * Meilisearch answered, but the live index is missing (deleted, or Meilisearch's data folder lost) or
 * has no settings yet (created at start-up, its settings task queued behind other work): the index
 * is not ready to answer, which is the service's 503, not a fault of the request or the code.
 */
export function isIndexNotReady(error: unknown): boolean {
  if (!(error instanceof MeilisearchApiError)) return false;
  const code = error.cause?.code;
  if (code === 'index_not_found') return true;
  // Only an index with no sort keys or filters at all: a key missing from a configured index is a fault.
  return (
    (code === 'invalid_search_sort' || code === 'invalid_search_filter') &&
    /does not have configured (sortable|filterable) attributes/.test(error.message)
  );
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
 * Searches go over kept-alive connections of one undici Pool per Meilisearch host, each request
 * written in one piece. The client library's `fetch` writes a request's headers and body apart, and
 * on a kept-alive connection the kernel then held the body (Nagle's algorithm) until Meilisearch's
 * delayed acknowledgement, about 40 ms later, which is why large answers once went on fresh
 * connections; undici's request API has neither cost, and a search pays neither a new connection
 * nor the library's per-request Headers and abort controller (docs/search.md, Under load).
 */
const pools = new Map<string, Pool>();

function poolFor(host: string, timeoutMs: number): Pool {
  const origin = new URL(/^https?:\/\//.test(host) ? host : `http://${host}`).origin;
  let pool = pools.get(origin);
  if (!pool) {
    pool = new Pool(origin, { connectTimeout: timeoutMs, keepAliveTimeout: 30_000, pipelining: 1 });
    pools.set(origin, pool);
  }
  return pool;
}

/**
 * One search of an index, as `client.index(uid).search(q, params)` answers it, with the same errors:
 * MeilisearchApiError when Meilisearch refuses it (its status and error code), MeilisearchRequestError
 * when it cannot be reached or does not answer within the client's timeout (meiliCall turns those
 * into SearchUnavailableError). A stand-in client (not a Meilisearch instance: a tracing proxy in a
 * benchmark) is asked through its own `index().search`.
 */
export async function indexSearch(
  client: Meilisearch,
  indexUid: string,
  body: Record<string, unknown>,
): Promise<SearchResponse> {
  if (!(client instanceof Meilisearch)) {
    const standIn = client as Pick<Meilisearch, 'index'>;
    return standIn.index(indexUid).search(body.q as string, body as SearchParams);
  }
  const { host, apiKey } = client.config;
  const timeout = client.config.timeout ?? QUERY_TIMEOUT_MS;
  const path = `${new URL(/^https?:\/\//.test(host) ? host : `http://${host}`).pathname.replace(/\/$/, '')}/indexes/${encodeURIComponent(indexUid)}/search`;
  let status: number;
  let text: string;
  try {
    const res = await poolFor(host, timeout).request({
      path,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
      },
      body: JSON.stringify(body),
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
    status = res.statusCode;
    text = await res.body.text();
  } catch (error) {
    throw new MeilisearchRequestError(`${host}${path}`, error);
  }
  const parsed = text === '' ? undefined : JSON.parse(text);
  if (status >= 300) throw new MeilisearchApiError(new Response(null, { status }), parsed);
  return parsed as SearchResponse;
}

export class MeiliTaskFailedError extends Error {
  override name = 'MeiliTaskFailedError';
}

/** How long a task is waited for unless a caller says otherwise (Meilisearch runs tasks one batch at a time). */
export const TASK_WAIT_MS = 300_000;

/** Waits for an enqueued task and throws unless it succeeded: callers mark work done only after this. */
export async function succeeded(enqueued: EnqueuedTaskPromise, timeoutMs = TASK_WAIT_MS): Promise<Task> {
  return checked(await enqueued.waitTask(taskWaitOptions(timeoutMs)));
}

/** `succeeded` for a task known by its uid (streamDocuments). */
export async function taskSucceeded(
  client: Meilisearch,
  taskUid: number,
  timeoutMs = TASK_WAIT_MS,
): Promise<Task> {
  return checked(await client.tasks.waitForTask(taskUid, taskWaitOptions(timeoutMs)));
}

/**
 * Short tasks are polled often (a change should be searchable quickly); long ones (a rebuild's
 * settings, minutes) once a second: each poll leaves a listener on the wait's abort signal.
 */
export const taskWaitOptions = (timeoutMs: number): WaitOptions => ({
  timeout: timeoutMs,
  interval: timeoutMs > TASK_WAIT_MS ? 1_000 : 100,
});

function checked(task: Task): Task {
  if (task.status !== 'succeeded') {
    throw new MeiliTaskFailedError(
      `Meilisearch task ${task.uid} (${task.type}) ${task.status}: ${task.error?.message ?? 'no reason given'}`,
    );
  }
  return task;
}

/**
 * Adds documents to an index as one task whose payload is streamed as NDJSON while `lines`
 * produces it, and returns the task's uid (wait for it with taskSucceeded). The client library
 * posts one body built whole in memory; a rebuild's tasks of 200,000 documents (about 58 MB) would
 * hold two of them at once in the worker (677 MB at its peak, measured). Streamed, the worker
 * holds one page of rows. Meilisearch stores the payload as it arrives and enqueues the task when
 * it ends. A failure of `lines` (reading Postgres) is thrown as itself; Meilisearch unreachable or
 * answering 5xx, as SearchUnavailableError.
 */
export async function streamDocuments(
  client: Meilisearch,
  indexUid: string,
  lines: AsyncIterable<string>,
  primaryKey = 'id',
): Promise<number> {
  const host = /^https?:\/\//.test(client.config.host) ? client.config.host : `http://${client.config.host}`;
  const url = new URL(
    `indexes/${encodeURIComponent(indexUid)}/documents`,
    host.endsWith('/') ? host : `${host}/`,
  );
  url.searchParams.set('primaryKey', primaryKey);
  let producing: unknown;
  async function* body() {
    try {
      for await (const chunk of lines) yield Buffer.from(chunk);
    } catch (error) {
      producing = error;
      throw error;
    }
  }
  let status: number;
  let text: string;
  try {
    const res = await request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-ndjson',
        ...(client.config.apiKey ? { authorization: `Bearer ${client.config.apiKey}` } : {}),
      },
      body: Readable.from(body()),
      headersTimeout: INDEXING_TIMEOUT_MS,
      bodyTimeout: INDEXING_TIMEOUT_MS,
    });
    status = res.statusCode;
    text = await res.body.text();
  } catch (error) {
    if (producing !== undefined) throw producing;
    throw new SearchUnavailableError(
      `search engine unavailable (${error instanceof Error ? error.message : String(error)})`,
      { cause: error },
    );
  }
  if (producing !== undefined) throw producing;
  if (status >= 500) throw new SearchUnavailableError(`search engine unavailable (HTTP ${status}: ${text})`);
  if (status >= 300)
    throw new MeiliTaskFailedError(`adding documents to ${indexUid} failed: HTTP ${status}: ${text}`);
  return (JSON.parse(text) as { taskUid: number }).taskUid;
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

/** Where Meilisearch is for this process: configured, else the local default. */
export function meiliConnectionOf(config: Pick<Config, 'meiliUrl' | 'meiliMasterKey'>): MeiliConnection {
  return { url: config.meiliUrl ?? LOCAL_DEFAULTS.meiliUrl, apiKey: config.meiliMasterKey };
}
