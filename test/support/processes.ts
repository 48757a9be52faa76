import { promises as fs } from 'node:fs';
import { isAlive } from '../../bin/local/child-process.js';

/** Every live descendant of `pid` (children, their children...), read from /proc. */
export async function descendants(pid: number): Promise<number[]> {
  const parents = new Map<number, number>();
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    // A process that exited between the listing and this read has no parent to record.
    const status = await fs.readFile(`/proc/${entry}/status`, 'utf8').catch(() => '');
    const ppid = /^PPid:\s+(\d+)/m.exec(status)?.[1];
    if (ppid) parents.set(Number(entry), Number(ppid));
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parents) {
      if (parent === p) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return found;
}

/** The processes bizdir started: the test harness's own esbuild helper (tsx) is not one of them. */
export async function serverProcesses(pid: number): Promise<number[]> {
  const pids = await descendants(pid);
  const own: number[] = [];
  for (const p of pids) {
    // Gone since the listing: nothing to wait for.
    const cmd = await fs.readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '');
    if (cmd && !cmd.includes('esbuild')) own.push(p);
  }
  return own;
}

/** Running, or stopped but not yet reaped by its parent: a zombie has released everything. */
export async function running(pid: number): Promise<boolean> {
  if (!isAlive(pid)) return false;
  // Unreadable: it exited after the check above.
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return status !== '' && !/^State:\s+Z/m.test(status);
}

/** Those of `pids` still running. */
export async function stillRunning(pids: number[]): Promise<number[]> {
  const left: number[] = [];
  for (const pid of pids) if (await running(pid)) left.push(pid);
  return left;
}
