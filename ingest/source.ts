import { createReadStream, createWriteStream, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { createGunzip } from 'node:zlib';
import yauzl from 'yauzl';
import { BizdirError } from '../shared/errors.js';
import { looksLikeZip, openRemoteZip, probeRanges } from './remote-zip.js';

/**
 * Opens a feed source (local path or http(s) URL; plain CSV, `.gz` or `.zip`, one CSV of a zip) as
 * one stream of CSV bytes. Everything streams: memory does not grow with the file. A zip behind a
 * URL is read in place with range requests (remote-zip.ts); from a server without them it is
 * downloaded to a temporary file first (removed by close()), since a zip's directory sits at its end.
 */
export interface FeedSource {
  /** Decompressed CSV bytes. */
  readonly stream: Readable;
  /** What the user gave, for messages. */
  readonly location: string;
  /** Bytes of the source consumed so far (compressed bytes for .gz; the CSV entry's bytes for .zip). */
  bytesRead(): number;
  /** Total of bytesRead at the end, when known (file size, Content-Length, zip entry size). */
  readonly bytesTotal: number | null;
  /** Releases the stream and any temporary file. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * A source that cannot be read. Some failures (no such file, HTTP 404, a zip without exactly one CSV,
 * corrupt compressed data) will not go away on retry; the others (network, HTTP 5xx) may: `retryable`.
 */
export class SourceError extends BizdirError {
  override name = 'SourceError';
}

/**
 * zlib's errors (Z_DATA_ERROR, Z_BUF_ERROR: a truncated or corrupt .gz, or a zip entry's deflate data)
 * will not heal on retry: they become a SourceError that is not retryable, here where they arise.
 */
function classifyStreamError(error: Error | undefined): Error | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (error && typeof code === 'string' && code.startsWith('Z_'))
    return new SourceError(`corrupt compressed data (${error.message})`, false);
  return error;
}

/**
 * The stream a reader gets. pipeline destroys it with the first failure of any stage (wrap), so
 * that failure is classified here, before the stream keeps it as its error.
 */
class SourceStream extends PassThrough {
  override destroy(error?: Error): this {
    return super.destroy(classifyStreamError(error));
  }
}

type Kind = 'csv' | 'gz' | 'zip';

export const isUrl = (location: string) => /^https?:\/\//i.test(location);

function kindFromName(name: string): Kind {
  const lower = name.toLowerCase();
  if (lower.endsWith('.zip')) return 'zip';
  if (lower.endsWith('.gz') || lower.endsWith('.gzip')) return 'gz';
  return 'csv';
}

/** Magic bytes win over the file name: a `.csv` that is really gzip must still import. */
async function sniffLocal(file: string): Promise<Kind | null> {
  const handle = await fs.open(file, 'r');
  try {
    const buf = Buffer.alloc(4);
    const { bytesRead } = await handle.read(buf, 0, 4, 0);
    if (bytesRead >= 2 && buf[0] === 0x1f && buf[1] === 0x8b) return 'gz';
    if (bytesRead >= 4 && buf.readUInt32LE(0) === 0x04034b50) return 'zip';
    return null;
  } finally {
    await handle.close();
  }
}

/** Counts the bytes flowing through, for progress. */
function counter(): { stream: Transform; count: () => number } {
  let n = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      n += chunk.length;
      done(null, chunk);
    },
  });
  return { stream, count: () => n };
}

/** Checks a local source exists and is a file; the CLI refuses a missing file before enqueueing. */
export async function assertLocalSourceReadable(file: string): Promise<void> {
  let stat: Awaited<ReturnType<typeof fs.stat>>;
  try {
    stat = await fs.stat(file);
  } catch {
    throw new SourceError(`file not found: ${file}`, false);
  }
  if (!stat.isFile()) throw new SourceError(`not a file: ${file}`, false);
  try {
    await fs.access(file, fs.constants.R_OK);
  } catch {
    throw new SourceError(`file is not readable: ${file}`, false);
  }
}

export interface OpenOptions {
  tmpDir?: string;
  /** In a zip holding several CSVs, the one to read (a run makes one part of each). */
  entry?: string;
}

export async function openSource(location: string, options: OpenOptions = {}): Promise<FeedSource> {
  if (isUrl(location)) return openUrl(location, options.tmpDir ?? os.tmpdir(), options.entry ?? null);
  return openLocal(location, null, options.entry ?? null);
}

/**
 * The CSV entries of a zip, local or behind a URL, in name order, when it holds more than one (a run
 * makes one part of each); an empty list for anything else (a CSV, a .gz, a zip of one CSV). A
 * remote zip is listed with range requests; from a server without them it is downloaded to list it.
 */
export async function csvEntriesOf(location: string, tmpDir = os.tmpdir()): Promise<string[]> {
  if (isUrl(location)) return remoteCsvEntries(location, tmpDir);
  if (((await sniffLocal(location)) ?? kindFromName(location)) !== 'zip') return [];
  return listCsvEntries(() => openZipFile(location));
}

/** Only a URL named `.zip` is looked into (a CSV or .gz URL costs no request here). */
async function remoteCsvEntries(url: string, tmpDir: string): Promise<string[]> {
  if (kindFromName(new URL(url).pathname) !== 'zip') return [];
  const remote = await probeRanges(url);
  if (remote) return looksLikeZip(remote.head) ? listCsvEntries(() => openRemote(url, remote)) : [];
  const tmp = await download(await fetchOk(url), url, tmpDir);
  try {
    return await csvEntriesOf(tmp);
  } finally {
    await fs.rm(tmp, { force: true });
  }
}

async function listCsvEntries(open: () => Promise<yauzl.ZipFile>): Promise<string[]> {
  const zip = await open();
  try {
    const names = (await csvEntries(zip)).map((e) => e.fileName).sort();
    return names.length > 1 ? names : [];
  } finally {
    zip.close();
  }
}

async function openLocal(
  file: string,
  tmpToRemove: string | null,
  entry: string | null,
): Promise<FeedSource> {
  await assertLocalSourceReadable(file);
  const kind = (await sniffLocal(file)) ?? kindFromName(file);
  const removeTmp = async () => {
    if (tmpToRemove) await fs.rm(tmpToRemove, { force: true });
  };
  if (kind === 'zip') return openZip(file, removeTmp, entry);
  const { size } = await fs.stat(file);
  const raw = createReadStream(file, { highWaterMark: 256 * 1024 });
  return wrap(file, raw, size, kind === 'gz', removeTmp);
}

/** Chains raw -> counter -> (gunzip) and forwards errors so the consumer sees one stream. */
function wrap(
  location: string,
  raw: Readable,
  total: number | null,
  gunzip: boolean,
  cleanup: () => Promise<void>,
): FeedSource {
  const count = counter();
  const out = new SourceStream({ highWaterMark: 256 * 1024 });
  // pipeline forwards back-pressure; a failure of any stage is raised on `out`.
  const piped = gunzip ? pipeline(raw, count.stream, createGunzip(), out) : pipeline(raw, count.stream, out);
  // pipeline destroys `out` with the first error of any stage; the reader sees it there, classified
  // (SourceStream). This catch only keeps the rejection handled.
  piped.catch((error: unknown) => {
    if (!out.destroyed) out.destroy(error as Error);
  });
  let closed = false;
  return {
    stream: out,
    location,
    bytesRead: count.count,
    bytesTotal: total,
    async close() {
      if (closed) return;
      closed = true;
      raw.destroy();
      out.destroy();
      await cleanup();
    },
  };
}

function openZipFile(file: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, autoClose: false }, (err, zip) => {
      if (err || !zip) reject(new SourceError(`${file}: not a readable zip file (${err?.message})`, false));
      else resolve(zip);
    });
  });
}

/** Lists the CSV entries of a zip, ignoring folders and macOS resource forks. */
function csvEntries(zip: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  return new Promise((resolve, reject) => {
    const found: yauzl.Entry[] = [];
    zip.on('entry', (entry: yauzl.Entry) => {
      const name = entry.fileName;
      if (!name.endsWith('/') && !name.startsWith('__MACOSX/') && /\.csv$/i.test(name)) found.push(entry);
      zip.readEntry();
    });
    zip.once('end', () => resolve(found));
    zip.once('error', (e: Error) => reject(new SourceError(`corrupt zip file (${e.message})`, false)));
    zip.readEntry();
  });
}

function openRemote(url: string, remote: Parameters<typeof openRemoteZip>[0]): Promise<yauzl.ZipFile> {
  return openRemoteZip(remote).catch((error: unknown) => {
    throw new SourceError(`${url}: not a readable zip file (${(error as Error).message})`, true);
  });
}

async function openZip(
  file: string,
  cleanup: () => Promise<void>,
  wanted: string | null,
  open: () => Promise<yauzl.ZipFile> = () => openZipFile(file),
): Promise<FeedSource> {
  let zip: yauzl.ZipFile | undefined;
  try {
    zip = await open();
    const all = await csvEntries(zip);
    const entries = wanted === null ? all : all.filter((e) => e.fileName === wanted);
    if (wanted !== null && entries.length === 0)
      throw new SourceError(`${file}: the zip holds no ${wanted}`, false);
    if (entries.length !== 1) {
      const names = entries.map((e) => e.fileName).join(', ');
      throw new SourceError(
        entries.length === 0
          ? `${file}: the zip holds no CSV file`
          : `${file}: the zip holds ${entries.length} CSV files (${names}); expected exactly one`,
        false,
      );
    }
    const entry = entries[0]!;
    const opened = zip;
    const raw = await new Promise<Readable>((resolve, reject) => {
      opened.openReadStream(entry, (err, stream) => {
        if (err || !stream)
          reject(new SourceError(`${file}: cannot read ${entry.fileName} (${err?.message})`, false));
        else resolve(stream);
      });
    });
    return wrap(`${file}:${entry.fileName}`, raw, entry.uncompressedSize, false, async () => {
      opened.close();
      await cleanup();
    });
  } catch (error) {
    zip?.close();
    await cleanup();
    throw error;
  }
}

async function fetchOk(url: string): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, { redirect: 'follow' });
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
    throw new SourceError(`cannot download ${url}: ${cause}`, true);
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    // 4xx will not heal by retrying (except 408/429); 5xx might.
    const retryable = response.status < 400 || response.status >= 500 || [408, 429].includes(response.status);
    throw new SourceError(
      `cannot download ${url}: HTTP ${response.status} ${response.statusText}`,
      retryable,
    );
  }
  return response;
}

async function openUrl(url: string, tmpDir: string, entry: string | null): Promise<FeedSource> {
  const remote =
    kindFromName(new URL(url).pathname) === 'zip' || entry !== null ? await probeRanges(url) : null;
  if (remote && looksLikeZip(remote.head))
    return openZip(
      url,
      async () => {},
      entry,
      () => openRemote(url, remote),
    );
  const response = await fetchOk(url);
  const length = Number(response.headers.get('content-length'));
  const total = Number.isFinite(length) && length > 0 ? length : null;
  const type = response.headers.get('content-type') ?? '';
  const name = new URL(url).pathname;
  const kind = /zip/i.test(type)
    ? 'zip'
    : /gzip/i.test(type) && kindFromName(name) !== 'zip'
      ? 'gz'
      : kindFromName(name);
  if (kind !== 'zip') return wrap(url, bodyOf(response), total, kind === 'gz', async () => {});

  const tmp = await download(response, url, tmpDir);
  return openLocal(tmp, tmp, entry);
}

const bodyOf = (response: Response) =>
  Readable.fromWeb(response.body as unknown as WebReadableStream<Uint8Array>);

/** Downloads a response body to a temporary file (removed on failure). */
async function download(response: Response, url: string, tmpDir: string): Promise<string> {
  await fs.mkdir(tmpDir, { recursive: true });
  const tmp = path.join(tmpDir, `bizdir-feed-${process.pid}-${Date.now().toString(36)}.zip`);
  try {
    await pipeline(bodyOf(response), createWriteStream(tmp));
  } catch (error) {
    await fs.rm(tmp, { force: true });
    throw new SourceError(`cannot download ${url}: ${(error as Error).message}`, true);
  }
  return tmp;
}
