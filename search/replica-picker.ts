import type { Meilisearch } from 'meilisearch';
import type { ReplicaName } from './index-sync.repository.js';
import { createMeiliClient } from './meili-client.js';
import type { MeiliReplica } from './replicas.js';

/**
 * Which Meilisearch replica a search asks (search/replicas.ts): the replicas in turn (round robin),
 * skipping for BACKOFF_MS one that failed to answer (refused, timed out, its index missing), which
 * is then tried only after every healthy one. Whether a replica is behind is told per search by its
 * pending changes in Postgres (search-service.ts), not here.
 */
export interface PickedReplica {
  name: ReplicaName;
  label: string;
  meili: Meilisearch;
}

/** How long a replica that failed is passed over (then tried again, and used if it answers). */
export const BACKOFF_MS = 5_000;

export class ReplicaPicker {
  private readonly replicas: PickedReplica[];
  private readonly downUntil = new Map<PickedReplica, number>();
  private next = 0;

  constructor(
    replicas: readonly MeiliReplica[],
    private readonly now: () => number = Date.now,
  ) {
    this.replicas = replicas.map((r) => ({ name: r.name, label: r.label, meili: createMeiliClient(r.conn) }));
  }

  /** The replicas in the order a search tries them: the healthy from the next in turn, then the rest. */
  order(): PickedReplica[] {
    const n = this.replicas.length;
    const start = this.next;
    this.next = (this.next + 1) % n;
    const turn = this.replicas.map((_, i) => this.replicas[(start + i) % n]!);
    const at = this.now();
    const healthy = turn.filter((r) => (this.downUntil.get(r) ?? 0) <= at);
    const resting = turn
      .filter((r) => (this.downUntil.get(r) ?? 0) > at)
      .sort((a, b) => this.downUntil.get(a)! - this.downUntil.get(b)!);
    return [...healthy, ...resting];
  }

  /** The replica did not answer: passed over for BACKOFF_MS. */
  down(replica: PickedReplica): void {
    this.downUntil.set(replica, this.now() + BACKOFF_MS);
  }

  /** The replica answered. */
  up(replica: PickedReplica): void {
    this.downUntil.delete(replica);
  }
}
