import type { Config } from '../shared/config.js';
import type { ReplicaName } from './index-sync.repository.js';
import { type MeiliConnection, meiliConnectionOf } from './meili-client.js';

/**
 * Meilisearch replicas: MEILI_URL may name several Meilisearch servers, each holding the whole
 * index (Meilisearch scales reads by replicas, not shards). The worker keeps every one in step, each
 * with its own progress in Postgres (replica-set.repository.ts), `bizdir reindex` rebuilds each in
 * turn, and the API spreads its searches over them (replica-picker.ts). One key, MEILI_MASTER_KEY,
 * opens them all.
 */
export interface MeiliReplica {
  /**
   * The name its progress is kept under: its URL with several replicas, undefined with one (the
   * outbox itself is then its progress, as before replicas existed).
   */
  name: ReplicaName;
  /** How it is named in logs and reports (its URL). */
  label: string;
  conn: MeiliConnection;
}

/** The replicas this process uses, in MEILI_URL's order (one: the configured or default Meilisearch). */
export function meiliReplicasOf(
  config: Pick<Config, 'meiliUrl' | 'meiliUrls' | 'meiliMasterKey'>,
): MeiliReplica[] {
  // A configuration assembled in code (tests, `bizdir start`'s filled one) may carry meiliUrl alone.
  const urls = config.meiliUrls ?? [];
  if (urls.length <= 1) {
    const conn = meiliConnectionOf(config);
    return [{ name: undefined, label: conn.url, conn }];
  }
  return urls.map((url) => ({
    name: replicaName(url),
    label: url,
    conn: { url, apiKey: config.meiliMasterKey },
  }));
}

/** A replica's name: its URL without a trailing slash, so `http://a:7700/` and `http://a:7700` are one. */
export const replicaName = (url: string) => url.replace(/\/+$/, '');
