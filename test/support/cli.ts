import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ENTRY = path.join(ROOT, 'bin/bizdir.ts');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Starts the real `bizdir` command (from source, through tsx) with the given environment. */
export function spawnCli(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', ENTRY, ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'silent', ...env, CI: 'true' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** What a running command has written so far, and its exit. */
export interface CliOutput {
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

/** Collects a spawned command's output as it comes (for a test that reads it while the command runs). */
export function collectOutput(child: ChildProcess): CliOutput {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => {
    stdout += d;
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    exited: new Promise((resolve) => child.once('close', resolve)),
  };
}

/** Runs `bizdir <args>` to completion. */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, env);
    const out = collectOutput(child);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`bizdir ${args.join(' ')} timed out\n${out.stdout()}\n${out.stderr()}`));
    }, timeoutMs);
    child.on('error', reject);
    void out.exited.then((code) => {
      clearTimeout(timer);
      resolve({ code, stdout: out.stdout(), stderr: out.stderr() });
    });
  });
}
