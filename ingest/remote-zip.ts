import { PassThrough, Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import yauzl from 'yauzl';

/**
 * A zip behind an http(s) URL, read in place with HTTP range requests: a zip's directory sits at
 * its end, so without ranges the whole file must be downloaded before its first CSV row can be
 * read. With them, `bizdir import` lists a remote zip's CSVs (one part each) without downloading
 * it, and each part's worker streams only its own entry. Servers that ignore `Range` (answering
 * 200 with the whole body) get the download path instead (see source.ts).
 */
export interface RemoteFile {
  url: string;
  size: number;
  /** The first bytes of the file, for sniffing its kind. */
  head: Buffer;
  /** Sent back with every range so a file replaced mid-read fails instead of mixing two versions. */
  validator: string | null;
}

/**
 * Asks for the first bytes of `url` as a range. Null when the server does not serve ranges (or
 * answers in a way we cannot use): the caller falls back to a plain download.
 */
export async function probeRanges(url: string): Promise<RemoteFile | null> {
  let response: Response;
  try {
    response = await fetch(url, { headers: { range: 'bytes=0-3' }, redirect: 'follow' });
  } catch {
    return null;
  }
  const total = /\/(\d+)$/.exec(response.headers.get('content-range') ?? '');
  if (response.status !== 206 || !total) {
    await response.body?.cancel();
    return null;
  }
  const head = Buffer.from(await response.arrayBuffer());
  const validator = response.headers.get('etag') ?? response.headers.get('last-modified');
  return { url: response.url || url, size: Number(total[1]), head, validator };
}

export const looksLikeZip = (head: Buffer) => head.length >= 4 && head.readUInt32LE(0) === 0x04034b50;

/** yauzl's reader over HTTP: each read of the zip is one range request. */
class HttpRangeReader extends yauzl.RandomAccessReader {
  constructor(private readonly file: RemoteFile) {
    super();
  }

  override _readStreamForRange(start: number, end: number): Readable {
    const out = new PassThrough();
    if (end <= start) {
      out.end();
      return out;
    }
    const headers: Record<string, string> = { range: `bytes=${start}-${end - 1}` };
    if (this.file.validator) headers['if-range'] = this.file.validator;
    fetch(this.file.url, { headers })
      .then((response) => {
        if (response.status !== 206 || !response.body) {
          void response.body?.cancel();
          out.destroy(
            new Error(
              response.status === 200
                ? 'the file changed on the server while it was being read'
                : `HTTP ${response.status} for bytes ${start}-${end - 1}`,
            ),
          );
          return;
        }
        const body = Readable.fromWeb(response.body as unknown as WebReadableStream<Uint8Array>);
        body.on('error', (error) => out.destroy(error));
        body.pipe(out);
      })
      .catch((error: unknown) => out.destroy(error as Error));
    return out;
  }
}

/** Opens a remote zip's directory (a few small range requests at the end of the file). */
export function openRemoteZip(file: RemoteFile): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.fromRandomAccessReader(
      new HttpRangeReader(file),
      file.size,
      { lazyEntries: true, autoClose: false },
      (err, zip) => {
        if (err || !zip) reject(err ?? new Error('cannot open the zip'));
        else resolve(zip);
      },
    );
  });
}
