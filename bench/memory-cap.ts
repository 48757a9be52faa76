import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  type Stats,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';

/**
 * A hard memory limit on one process, the way a deployment sets it (compose `mem_limit`, systemd
 * `MemoryMax`, a Kubernetes limit): a Linux memory cgroup, v2 or v1, created for the process. The
 * cgroup counts the process's anonymous memory **and** the page cache it faults in (the
 * memory-mapped index of Meilisearch), and reclaims the page cache when the limit is reached. Needs
 * root and a writable cgroup filesystem; the benchmark uses it to measure the search under a cap.
 */
export interface MemoryCap {
  path: string;
  limitBytes: number;
  /** The highest usage the cgroup has seen (memory.peak / memory.max_usage_in_bytes). */
  peakBytes(): number;
  /** How often the cgroup hit its limit (v1 failcnt; v2 events "max"). */
  limitHits(): number;
  remove(): void;
}

const V2_ROOT = '/sys/fs/cgroup';
const V1_ROOT = '/sys/fs/cgroup/memory';

/** Bytes of "6GiB", "512MiB", "6 GiB", "6442450944". */
export function parseBytes(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB|TiB)?\s*$/i.exec(text);
  if (!m) throw new Error(`not a size: ${JSON.stringify(text)} (use e.g. 6GiB or 512MiB)`);
  const unit = (m[2] ?? 'B').toLowerCase();
  const scale = { b: 1, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 }[unit]!;
  return Math.round(Number(m[1]) * scale);
}

const read = (file: string) => readFileSync(file, 'utf8').trim();

export function capMemory(pid: number, limitBytes: number, name: string): MemoryCap {
  const v2 = existsSync(path.join(V2_ROOT, 'cgroup.controllers'));
  if (v2) {
    const controllers = read(path.join(V2_ROOT, 'cgroup.subtree_control'));
    if (!controllers.split(/\s+/).includes('memory'))
      throw new Error(`cgroup v2 at ${V2_ROOT} does not delegate the memory controller`);
    const dir = path.join(V2_ROOT, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'memory.max'), String(limitBytes));
    writeFileSync(path.join(dir, 'memory.swap.max'), '0');
    writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
    return {
      path: dir,
      limitBytes,
      peakBytes: () => Number(read(path.join(dir, 'memory.peak'))),
      limitHits: () => Number(/^max (\d+)/m.exec(read(path.join(dir, 'memory.events')))?.[1] ?? 0),
      remove: () => rmdirSync(dir),
    };
  }
  if (!existsSync(path.join(V1_ROOT, 'memory.limit_in_bytes')))
    throw new Error(
      'no memory cgroup (v2 at /sys/fs/cgroup or v1 at /sys/fs/cgroup/memory) to limit Meilisearch with',
    );
  const dir = path.join(V1_ROOT, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(limitBytes));
  writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
  return {
    path: dir,
    limitBytes,
    peakBytes: () => Number(read(path.join(dir, 'memory.max_usage_in_bytes'))),
    limitHits: () => Number(read(path.join(dir, 'memory.failcnt'))),
    remove: () => {
      try {
        rmdirSync(dir);
      } catch {
        // a process still in it (it has exited but not been reaped yet): the kernel frees the group later
      }
    },
  };
}

/**
 * Every regular file under `dir` with its stat, depth first. A file or folder removed while the
 * walk runs (a deleted index, a processed update file) is skipped.
 */
function forEachFile(dir: string, visit: (file: string, st: Stats) => void): void {
  const walk = (d: string) => {
    let entries: string[];
    try {
      entries = readdirSync(d);
    } catch {
      return;
    }
    for (const entry of entries) {
      const file = path.join(d, entry);
      let st: Stats;
      try {
        st = statSync(file);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(file);
      else if (st.isFile()) visit(file, st);
    }
  };
  if (existsSync(dir)) walk(dir);
}

/**
 * Drops a folder's files from the page cache (after writing back what is dirty), so that a process
 * started next faults them in itself and is charged for them: pages cached by an earlier process
 * belong to that process's cgroup and would be neither counted nor reclaimed by the new limit.
 */
export function evictFromPageCache(dir: string): void {
  execFileSync('sync');
  forEachFile(dir, (file, st) => {
    if (st.size > 0) execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
  });
}

/**
 * Reads every file under `dir` once, so that the kernel holds it in the page cache (what an
 * operator does with `vmtouch -t` or `cat index > /dev/null` before putting a restarted
 * Meilisearch behind traffic). Returns the bytes read.
 */
export function readIntoPageCache(dir: string): number {
  let bytes = 0;
  forEachFile(dir, (file, st) => {
    // Under Meilisearch's write map (MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE) an LMDB
    // file is a sparse file the size of the whole map (terabytes). LMDB hands out pages from
    // the start of the file, so its written part is the first `allocated` bytes: read those.
    const length = Math.min(st.size, st.blocks * 512);
    if (length === 0) return;
    execFileSync('dd', [
      `if=${file}`,
      'of=/dev/null',
      'bs=4M',
      `count=${Math.ceil(length / 2 ** 22)}`,
      'status=none',
    ]);
    bytes += length;
  });
  return bytes;
}

/**
 * The disk a folder really takes (`du`): the blocks allocated to its files, not their sizes.
 * Meilisearch's `/stats` `databaseSize` is the size of its LMDB files, which under the write map
 * (MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE) are sparse files the size of the whole map
 * (2 TiB); the blocks are what the disk holds either way.
 */
export function allocatedBytes(dir: string): number {
  let bytes = 0;
  forEachFile(dir, (_file, st) => {
    bytes += st.blocks * 512;
  });
  return bytes;
}
