import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import type { Meilisearch } from 'meilisearch';
import type { Config } from '../../shared/config.js';
import type { Db } from '../../shared/db.js';
import { lastBuildSize, recordBuildSize } from './index-builds.repository.js';

/**
 * How far the search index's file has grown since its last build. Live updates leave the index's
 * LMDB file larger than a fresh build of the same Orgs (freed pages stay in the file for later
 * writes: docs/operations.md, The monthly register), and only a rebuild gives the space back.
 *
 * What is measured: the disk the files under Meilisearch's `indexes/` folder hold (allocated
 * blocks, what `du` reports), per document of the live index. Not Meilisearch's `/stats`: with
 * LMDB's write map (the default here) its `databaseSize` is the 2 TiB sparse map, and its
 * `usedDatabaseSize` leaves out the freed pages, which are the growth. The folder holds every index
 * of that Meilisearch, so this assumes it serves bizdir alone (as `bizdir start` and the compose
 * file run it), and a build in progress (a second index beside the live one) is not measured.
 */
export interface IndexSize {
  documents: number;
  bytes: number;
}

/** Meilisearch's database folder as this process sees it, or null when it cannot see one. */
export function meiliDbPathOf(config: Pick<Config, 'meiliDbPath' | 'dataDir'>): string | null {
  if (config.meiliDbPath) return config.meiliDbPath;
  const embedded = path.join(config.dataDir, 'meilisearch', 'data.ms');
  return existsSync(embedded) ? embedded : null;
}

/** Bytes the files under `dir` occupy on disk (their allocated blocks, as `du` counts them). */
export async function allocatedBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    // A file removed between the listing and the stat (an index being deleted) holds nothing.
    const stat = await fs.lstat(path.join(entry.parentPath, entry.name)).catch(() => null);
    if (stat) total += stat.blocks * 512;
  }
  return total;
}

/** The live index's size now; a string says why it cannot be measured. */
export async function measureIndex(
  meili: Meilisearch,
  indexUid: string,
  dbPath: string | null,
): Promise<IndexSize | string> {
  if (dbPath === null)
    return 'cannot see the Meilisearch database folder (set MEILI_DB_PATH to its --db-path)';
  const indexes = path.join(dbPath, 'indexes');
  if (!existsSync(indexes)) return `no Meilisearch indexes folder at ${indexes} (check MEILI_DB_PATH)`;
  const documents = (await meili.index(indexUid).getStats()).numberOfDocuments;
  if (documents === 0) return `the index ${indexUid} holds no documents`;
  return { documents, bytes: await allocatedBytes(indexes) };
}

/** Bytes per document now against right after the last build. */
export const growthOf = (now: IndexSize, built: IndexSize) =>
  now.bytes / now.documents / (built.bytes / built.documents);

export type IndexGrowth =
  | { kind: 'unmeasurable'; reason: string }
  | { kind: 'measured'; now: IndexSize; built: IndexSize | null; growth: number | null };

export async function indexGrowth(deps: {
  db: Db;
  meili: Meilisearch;
  indexUid: string;
  dbPath: string | null;
}): Promise<IndexGrowth> {
  const now = await measureIndex(deps.meili, deps.indexUid, deps.dbPath);
  if (typeof now === 'string') return { kind: 'unmeasurable', reason: now };
  const last = await lastBuildSize(deps.db, deps.indexUid);
  const built = last ? { documents: Number(last.documents), bytes: Number(last.bytes) } : null;
  return { kind: 'measured', now, built, growth: built ? growthOf(now, built) : null };
}

/**
 * Records the index's size right after a build, when it can be measured; the reason when not (the
 * build itself succeeded either way: a growth threshold then rebuilds at its next firing).
 */
export async function recordIndexBuilt(deps: {
  db: Db;
  meili: Meilisearch;
  indexUid: string;
  dbPath: string | null;
}): Promise<IndexSize | string> {
  const size = await measureIndex(deps.meili, deps.indexUid, deps.dbPath);
  if (typeof size !== 'string') await recordBuildSize(deps.db, { indexUid: deps.indexUid, ...size });
  return size;
}

/** How a growth reads in messages: 1.42×. */
export const times = (x: number) => `${x.toFixed(2)}×`;
