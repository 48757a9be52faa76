import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Meilisearch } from 'meilisearch';
import { inject } from 'vitest';
import { type MeiliServer, startMeiliServer } from '../../bin/local/meili-server.js';
import { createMeiliClient, INDEXING_TIMEOUT_MS, type MeiliConnection } from '../../search/meili-client.js';
import { uniqueSuffix } from './env.js';

declare module 'vitest' {
  export interface ProvidedContext {
    meiliUrl: string;
    meiliKey: string;
  }
}

/** One private Meilisearch for the whole test run (global setup); its folder goes with it. */
export async function startRunMeili(runId: string): Promise<{ server: MeiliServer; stop(): Promise<void> }> {
  const dataDir = path.join(os.tmpdir(), `bizdir-test-meili-${runId}`);
  const server = await startMeiliServer({
    dataDir,
    masterKey: `test-${runId}-master-key`,
    maxIndexingThreads: 1,
    maxIndexingMemory: '512Mb',
    // As shipped (shared/config.ts): the tests run the index on LMDB's write map.
    reduceIndexingMemory: true,
  });
  return {
    server,
    async stop() {
      await server.stop();
      await fs.rm(dataDir, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}

/** The run's Meilisearch, seen from a test file. */
export function testMeiliConnection(): MeiliConnection {
  return { url: inject('meiliUrl'), apiKey: inject('meiliKey') };
}

/** A client with the indexing timeout, for setting up and inspecting indexes in tests. */
export function testMeiliClient(): Meilisearch {
  return createMeiliClient(testMeiliConnection(), INDEXING_TIMEOUT_MS);
}

/** A unique index name: tests never share an index. */
export const testIndexName = (label = 'orgs') =>
  `t_${label}_${uniqueSuffix()}`.replace(/[^A-Za-z0-9_-]/g, '_');

/** Environment for `bizdir` child processes of a test. */
export function meiliEnv(indexUid: string): Record<string, string> {
  const conn = testMeiliConnection();
  return { MEILI_URL: conn.url, MEILI_MASTER_KEY: conn.apiKey ?? '', MEILI_INDEX: indexUid };
}
