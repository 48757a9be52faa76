import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, promises as fs, constants as fsConstants, openSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/** A server process this project started and must stop. */
export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  /** Resolves when the process has exited, whoever ended it. */
  readonly exited: Promise<void>;
  /** Sends `signal`, waits up to `graceMs`, then SIGKILL. Resolves once the process is gone. */
  stop(signal: NodeJS.Signals, graceMs: number): Promise<void>;
}

export interface SpawnOptions {
  /** Output goes to this file (appended), never to our terminal. */
  logFile: string;
  uid?: number;
  gid?: number;
  env?: NodeJS.ProcessEnv;
}

/**
 * Starts a server in its own process group (`detached`): a Ctrl-C in the terminal reaches only
 * bizdir, which then stops the servers in order (workers first, Postgres last) instead of every
 * process getting SIGINT at once and Postgres going away under a batch that is still writing.
 */
export async function spawnServer(
  name: string,
  command: string,
  args: string[],
  options: SpawnOptions,
): Promise<ManagedProcess> {
  const out = openSync(options.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(command, args, {
      detached: true,
      stdio: ['ignore', out, out],
      env: options.env ?? process.env,
      ...(options.uid !== undefined ? { uid: options.uid, gid: options.gid } : {}),
    });
  } finally {
    closeSync(out);
  }
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${name} did not start`);
  let done = false;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      done = true;
      resolve();
    });
  });
  return {
    name,
    pid,
    exited,
    async stop(signal, graceMs) {
      if (done) return;
      child.kill(signal);
      const timer = setTimeout(() => {
        if (!done) child.kill('SIGKILL');
      }, graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the server binding it confirms). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Polls `probe` until it succeeds. Gives up when the process exits (its log says why) or after
 * `timeoutMs`, naming the log file so the user knows where to look.
 */
export async function waitUntilReady(
  proc: ManagedProcess,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  logFile: string,
): Promise<void> {
  let exited = false;
  void proc.exited.then(() => {
    exited = true;
  });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${proc.name} exited during start-up; see ${logFile}`);
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  await proc.stop('SIGKILL', 0);
  throw new Error(`${proc.name} did not become ready within ${timeoutMs / 1000}s; see ${logFile}`);
}

/** True when a process with this pid exists (a zombie or another user's process counts). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The command line of a live process, or '' when it is gone or unreadable (Linux /proc). */
export async function commandLineOf(pid: number): Promise<string> {
  return fs
    .readFile(`/proc/${pid}/cmdline`, 'utf8')
    .then((s) => s.replaceAll('\0', ' ').trim())
    .catch(() => '');
}

/** Stops a server left running by a bizdir that was killed hard, so its data folder can be reused. */
export async function stopOrphan(pid: number, signal: NodeJS.Signals, timeoutMs = 30_000): Promise<void> {
  try {
    process.kill(pid, signal);
  } catch {
    return;
  }
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
}

/** The first executable named `name` on PATH, or undefined. */
export async function findOnPath(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      await fs.access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return undefined;
}

/**
 * Stops every live process whose command line contains `marker` (a data path of ours): a server
 * left behind by a bizdir that was killed hard. Linux only (/proc); elsewhere it finds nothing.
 */
export async function stopProcessesUsing(marker: string, signal: NodeJS.Signals): Promise<number[]> {
  const entries = await fs.readdir('/proc').catch(() => [] as string[]);
  const found: number[] = [];
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    if ((await commandLineOf(pid)).includes(marker)) found.push(pid);
  }
  await Promise.all(found.map((pid) => stopOrphan(pid, signal)));
  return found;
}
