import type { EventFeed, FeedEvent, FeedPage } from '../../webhooks/event-feed.js';

/**
 * An events feed in memory, for tests of delivery's state machine that need to place events exactly
 * (their times, their types) without writing records. Ids are `<xid>-<seq>` as the real feed's.
 */
export class FakeFeed implements EventFeed {
  readonly events: FeedEvent[] = [];
  private seq = 0;

  /** Appends events (one transaction each), created at `at` (default now). */
  add(count: number, type = 'org.updated', at: Date = new Date()): FeedEvent[] {
    const added: FeedEvent[] = [];
    for (let i = 0; i < count; i++) {
      this.seq++;
      const event = {
        id: `${1000 + this.seq}-${this.seq}`,
        type,
        created: at.toISOString(),
        data: { domain: `${this.seq}.gb.bizdir.test`, version_number: 1 },
      };
      this.events.push(event);
      added.push(event);
    }
    return added;
  }

  compare(a: string | null, b: string | null): number {
    if (a === b) return 0;
    if (a === null) return -1;
    if (b === null) return 1;
    const [ax, as] = a.split('-').map(Number) as [number, number];
    const [bx, bs] = b.split('-').map(Number) as [number, number];
    return ax !== bx ? ax - bx : as - bs;
  }

  async read(after: string | null, limit: number, types: readonly string[] | undefined): Promise<FeedPage> {
    const later = this.events.filter((e) => this.compare(e.id, after) > 0);
    const hits: FeedEvent[] = [];
    let last: FeedEvent | undefined;
    for (const e of later) {
      if (hits.length === limit) break;
      last = e;
      if (!types || types.includes(e.type)) hits.push(e);
    }
    const scanned = last ? later.indexOf(last) + 1 : 0;
    return { events: hits, next_cursor: last?.id ?? after, has_more: scanned < later.length };
  }

  async head(): Promise<string | null> {
    return this.events.at(-1)?.id ?? null;
  }

  async positionAt(time: Date): Promise<string | null> {
    const first = this.events.find((e) => new Date(e.created) >= time);
    if (!first) return this.head();
    const [xid, seq] = first.id.split('-').map(Number) as [number, number];
    return `${xid}-${seq - 1}`;
  }
}
