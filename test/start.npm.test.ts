import { type ChildProcess, spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliOutput, collectOutput } from './support/cli.js';
import { embeddedStartEnv } from './support/env.js';
import { serverProcesses, stillRunning } from './support/processes.js';

/**
 * `npm start` as a process manager or a container runtime runs it: the signal goes to npm, not to
 * bizdir. The project's own package.json script runs, from a copy of the project whose
 * dist/bin/bizdir.js loads the TypeScript source (so the test needs no build), and every process it
 * started must be gone after each way of stopping it, and the next `npm start` must work.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SHUTDOWN_TIMEOUT_MS = 5_000;
// What `bizdir start` promises: the jobs' shutdown timeout, plus 30 s for everything else.
const STOP_BOUND_MS = SHUTDOWN_TIMEOUT_MS + 30_000;

let project: string;
let dataDir: string;
const spawned: ChildProcess[] = [];
const pidsSeen = new Set<number>();

beforeAll(async () => {
  project = await fs.mkdtemp(path.join(os.tmpdir(), 'bizdir-npm-start-'));
  // Searchable by others, as /tmp is: an embedded Postgres started as root runs as another user.
  await fs.chmod(project, 0o755);
  dataDir = path.join(project, 'data');
  await fs.copyFile(path.join(ROOT, 'package.json'), path.join(project, 'package.json'));
  await fs.mkdir(path.join(project, 'dist/bin'), { recursive: true });
  const tsx = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/esm/api/index.mjs')).href;
  const entry = pathToFileURL(path.join(ROOT, 'bin/bizdir.ts')).href;
  await fs.writeFile(
    path.join(project, 'dist/bin/bizdir.js'),
    `import { register } from '${tsx}';\nregister();\nawait import('${entry}');\n`,
  );
});

afterAll(async () => {
  for (const child of spawned)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  // Whatever a failed assertion left running (bizdir, the embedded servers) must not outlive the test.
  for (const pid of await stillRunning([...pidsSeen])) process.kill(pid, 'SIGKILL');
  await fs.rm(project, { recursive: true, force: true });
});

interface NpmStart {
  npm: ChildProcess;
  out: CliOutput;
  /** bizdir start and the embedded servers, seen while it was running. */
  pids: number[];
}

/** `npm start` in its own process group (as in a terminal of its own), once bizdir is ready. */
async function npmStart(): Promise<NpmStart> {
  const npm = spawn(
    'npm',
    ['start', '--', '--no-samples', '--shutdown-timeout', String(SHUTDOWN_TIMEOUT_MS)],
    {
      cwd: project,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ...embeddedStartEnv(dataDir),
        CI: 'true',
      },
    },
  );
  spawned.push(npm);
  const out = collectOutput(npm);
  const deadline = Date.now() + 100_000;
  while (!out.stdout().includes('Press Ctrl-C to stop.')) {
    if (npm.exitCode !== null || Date.now() > deadline) {
      throw new Error(`npm start not ready (exit ${npm.exitCode})\n${out.stdout()}\n${out.stderr()}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const pids = await serverProcesses(npm.pid!);
  for (const pid of pids) pidsSeen.add(pid);
  return { npm, out, pids };
}

/** Waits until none of `pids` runs, up to `STOP_BOUND_MS`; returns those still running then. */
async function leftAfterStop(pids: number[]): Promise<number[]> {
  const deadline = Date.now() + STOP_BOUND_MS;
  let left = await stillRunning(pids);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    left = await stillRunning(pids);
  }
  return left;
}

const exitOf = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((resolve) => child.once('exit', () => resolve()));

describe('npm start', () => {
  it('stops with everything it started on SIGTERM, SIGINT, Ctrl-C or its death, and starts again each time', async () => {
    // SIGTERM to npm alone, as a process manager or `docker stop` sends it.
    const first = await npmStart();
    // bizdir start itself, and Postgres, redis-server and Meilisearch at least.
    expect(first.pids.length).toBeGreaterThanOrEqual(4);
    first.npm.kill('SIGTERM');
    expect(await leftAfterStop(first.pids)).toEqual([]);
    await exitOf(first.npm);
    expect(first.out.stdout()).toContain('bizdir stopped');

    // npm killed hard: nothing forwards a signal, bizdir must notice its parent is gone.
    const second = await npmStart();
    second.npm.kill('SIGKILL');
    expect(await leftAfterStop(second.pids)).toEqual([]);
    expect(second.out.stdout()).toContain('bizdir stopped');

    // SIGINT to npm alone.
    const third = await npmStart();
    third.npm.kill('SIGINT');
    expect(await leftAfterStop(third.pids)).toEqual([]);
    expect(third.out.stdout()).toContain('bizdir stopped');

    // Ctrl-C in a terminal: SIGINT to the whole foreground group, so bizdir hears it from the
    // terminal and again from npm. That is one request to stop cleanly, not a second Ctrl-C.
    const fourth = await npmStart();
    process.kill(-fourth.npm.pid!, 'SIGINT');
    expect(await leftAfterStop(fourth.pids)).toEqual([]);
    await exitOf(fourth.npm);
    expect(fourth.out.stdout()).toContain('bizdir stopped');
    expect(fourth.npm.exitCode).toBe(0);
  }, 600_000);
});
