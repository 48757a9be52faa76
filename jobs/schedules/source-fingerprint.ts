import { createHash } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import { pipeline } from 'node:stream/promises';

/**
 * What a feed source looks like right now, to tell whether it changed since the last successful
 * run. A file: its size and SHA-256 (size alone misses same-length edits; mtime changes on a mere
 * copy). A URL: the server's validators (ETag, else Last-Modified with Content-Length), read with a
 * HEAD request so an unchanged multi-gigabyte snapshot is never downloaded. `undefined` means
 * "cannot tell", and the run goes ahead: a needless re-import changes nothing, a wrong skip loses data.
 */
export async function sourceFingerprint(source: string): Promise<string | undefined> {
  return /^https?:\/\//i.test(source) ? urlFingerprint(source) : fileFingerprint(source);
}

export async function fileFingerprint(file: string): Promise<string | undefined> {
  let size: number;
  try {
    size = (await fs.stat(file)).size;
  } catch {
    // A missing file is the import's to report (it fails the run with a clear reason).
    return undefined;
  }
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return `size=${size};sha256=${hash.digest('hex')}`;
}

export async function urlFingerprint(url: string, timeoutMs = 15_000): Promise<string | undefined> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'HEAD',
      redirect: 'follow',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch {
    return undefined;
  }
  if (!response.ok) return undefined;
  const etag = response.headers.get('etag');
  // A weak ETag (W/"...") still means "semantically the same", which is all a skip needs.
  if (etag) return `etag=${etag}`;
  const modified = response.headers.get('last-modified');
  if (modified) return `last-modified=${modified};length=${response.headers.get('content-length') ?? '?'}`;
  return undefined;
}
