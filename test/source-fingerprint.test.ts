import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceFingerprint } from '../jobs/schedules/source-fingerprint.js';

/** A feed server whose validators the test sets per path; GET bodies are never needed (HEAD only). */
const headers: Record<string, Record<string, string>> = {};
const methods: string[] = [];
let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    methods.push(req.method ?? '');
    // A server (a signed object-store URL, some CDNs) that answers GET only.
    if (req.url === '/get-only.zip') {
      if (req.method === 'HEAD') res.writeHead(403).end();
      else
        res
          .writeHead(206, {
            'last-modified': 'Tue, 01 Dec 2026 00:00:00 GMT',
            'content-range': 'bytes 0-0/5000',
          })
          .end('P');
      return;
    }
    const h = headers[req.url ?? ''];
    if (!h) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, h).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.close();
});

describe('the fingerprint of a feed URL', () => {
  it('is its ETag, else Last-Modified with Content-Length, read with HEAD only', async () => {
    headers['/etag.csv'] = { etag: '"v1"', 'last-modified': 'Sun, 01 Nov 2026 00:00:00 GMT' };
    headers['/lm.csv'] = { 'last-modified': 'Sun, 01 Nov 2026 00:00:00 GMT', 'content-length': '0' };
    expect(await sourceFingerprint(`${base}/etag.csv`)).toBe('etag="v1"');
    expect(await sourceFingerprint(`${base}/lm.csv`)).toBe(
      'last-modified=Sun, 01 Nov 2026 00:00:00 GMT;length=0',
    );

    headers['/etag.csv'] = { etag: '"v2"' };
    expect(await sourceFingerprint(`${base}/etag.csv`)).toBe('etag="v2"');
    expect(new Set(methods)).toEqual(new Set(['HEAD']));
  });

  it('asks a server that refuses HEAD for one byte instead, and reads the length from Content-Range', async () => {
    methods.length = 0;
    expect(await sourceFingerprint(`${base}/get-only.zip`)).toBe(
      'last-modified=Tue, 01 Dec 2026 00:00:00 GMT;length=5000',
    );
    expect(methods).toEqual(['HEAD', 'GET']);
  });

  it('is unknown (so the run goes ahead) without validators, on an error status or when unreachable', async () => {
    headers['/plain.csv'] = {};
    expect(await sourceFingerprint(`${base}/plain.csv`)).toBeUndefined();
    expect(await sourceFingerprint(`${base}/missing.csv`)).toBeUndefined();
    expect(await sourceFingerprint('http://127.0.0.1:1/feed.csv')).toBeUndefined();
  });
});
