import { createHash } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { isUrl } from '../../ingest/source.js';

/**
 * Whether a feed source exists right now, and what it looks like, to tell whether it changed since
 * the last successful run. A file: stat, then its size and SHA-256 (size alone misses same-length
 * edits; mtime changes on a mere copy). A URL: one HEAD request, its validators (ETag, else
 * Last-Modified with the length), so an unchanged multi-gigabyte snapshot is never downloaded; a
 * server that refuses HEAD is asked for one byte instead (a ranged GET). A fingerprint `undefined`
 * means "cannot tell", and the run goes ahead: a needless re-import changes nothing, a wrong skip
 * loses data.
 */
export type SourceProbe =
  | { state: 'found'; fingerprint(): Promise<string | undefined> }
  /** Not there: no such file, or an HTTP 4xx that retrying will not change (404, 410, 403 ...). */
  | { state: 'missing'; reason: string }
  /** Cannot tell now: the network, an HTTP 5xx, 408 or 429. Worth asking again later. */
  | { state: 'unreachable'; reason: string };

export type Probe = (location: string) => Promise<SourceProbe>;

export const probeSource: Probe = (location) => (isUrl(location) ? probeUrl(location) : probeFile(location));

export async function probeFile(file: string): Promise<SourceProbe> {
  let stat: Awaited<ReturnType<typeof fs.stat>>;
  try {
    stat = await fs.stat(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { state: 'missing', reason: code === 'ENOENT' ? 'file not found' : `cannot stat (${code})` };
  }
  if (!stat.isFile()) return { state: 'missing', reason: 'not a file' };
  return { state: 'found', fingerprint: () => fileFingerprint(file) };
}

export async function fileFingerprint(file: string): Promise<string | undefined> {
  let size: number;
  try {
    size = (await fs.stat(file)).size;
  } catch {
    // Gone since it was found: the import reports it (it fails the run with a clear reason).
    return undefined;
  }
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return `size=${size};sha256=${hash.digest('hex')}`;
}

/** 4xx answers a retry will not change; 408 and 429 are the server asking for one. */
const isMissing = (status: number) => status >= 400 && status < 500 && status !== 408 && status !== 429;

export async function probeUrl(url: string, timeoutMs = 15_000): Promise<SourceProbe> {
  const ask = async (method: 'HEAD' | 'GET'): Promise<Response | string> => {
    try {
      const response = await fetch(url, {
        method,
        redirect: 'follow',
        signal: AbortSignal.timeout(timeoutMs),
        ...(method === 'GET' ? { headers: { range: 'bytes=0-0' } } : {}),
      });
      // Only the headers matter; a server that ignores the range would otherwise send it all.
      await response.body?.cancel();
      return response;
    } catch (error) {
      const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
      return `cannot reach it (${cause})`;
    }
  };
  let response = await ask('HEAD');
  // Some servers (signed object-store URLs, some CDNs) answer HEAD with 403 or 405 and GET fine.
  if (typeof response !== 'string' && !response.ok && isMissing(response.status) && response.status !== 404) {
    response = await ask('GET');
  }
  if (typeof response === 'string') return { state: 'unreachable', reason: response };
  const status = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
  if (isMissing(response.status)) return { state: 'missing', reason: status };
  if (!response.ok) return { state: 'unreachable', reason: status };
  const fingerprint = validatorsOf(response);
  return { state: 'found', fingerprint: async () => fingerprint };
}

function validatorsOf(response: Response): string | undefined {
  const etag = response.headers.get('etag');
  // A weak ETag (W/"...") still means "semantically the same", which is all a skip needs.
  if (etag) return `etag=${etag}`;
  const modified = response.headers.get('last-modified');
  if (!modified) return undefined;
  // A ranged answer's own length is the range's; the file's is after the slash of Content-Range.
  const total = /\/(\d+)$/.exec(response.headers.get('content-range') ?? '')?.[1];
  return `last-modified=${modified};length=${total ?? response.headers.get('content-length') ?? '?'}`;
}

/** The fingerprint of a source, or undefined when it is missing, unreachable or has no validators. */
export async function sourceFingerprint(location: string): Promise<string | undefined> {
  const probe = await probeSource(location);
  return probe.state === 'found' ? probe.fingerprint() : undefined;
}

/**
 * The fingerprint of a run's sources together: one source's own (what runs recorded before
 * schedules took several, so an unchanged source is still recognised), else a digest of each
 * location with its fingerprint. Null when any of them cannot tell.
 */
export function runFingerprint(
  sources: readonly { location: string; fingerprint: string | undefined }[],
): string | null {
  if (sources.some((s) => s.fingerprint === undefined)) return null;
  if (sources.length === 1) return sources[0]!.fingerprint!;
  const hash = createHash('sha256');
  for (const s of sources) hash.update(`${s.location}\t${s.fingerprint}\n`);
  return `sources=${sources.length};sha256=${hash.digest('hex')}`;
}
