import { describe, expect, it } from 'vitest';
import { BACKOFF_MS, ReplicaPicker } from '../search/replica-picker.js';
import { meiliReplicasOf } from '../search/replicas.js';
import { loadConfig } from '../shared/config.js';

const replicas = meiliReplicasOf(loadConfig({ MEILI_URL: 'http://a:7700,http://b:7700/,http://c:7700' }));

describe('Meilisearch replicas', () => {
  it('are named by URL (no trailing slash), and one Meilisearch has no name: the outbox is its progress', () => {
    expect(replicas.map((r) => r.name)).toEqual(['http://a:7700', 'http://b:7700', 'http://c:7700']);
    expect(meiliReplicasOf(loadConfig({ MEILI_URL: 'http://a:7700' })).map((r) => r.name)).toEqual([
      undefined,
    ]);
  });

  it('are asked in turn; one that failed is asked last until its backoff ends, then in turn again', () => {
    let now = 1_000;
    const picker = new ReplicaPicker(replicas, () => now);
    const first = () => picker.order()[0]!.label;
    expect([first(), first(), first(), first()]).toEqual([
      'http://a:7700',
      'http://b:7700/',
      'http://c:7700',
      'http://a:7700',
    ]);
    const b = picker.order().find((r) => r.label === 'http://b:7700/')!;
    picker.down(b);
    for (let i = 0; i < 3; i++) {
      const order = picker.order().map((r) => r.label);
      expect(order).toHaveLength(3);
      expect(order[2]).toBe('http://b:7700/');
    }
    now += BACKOFF_MS + 1;
    expect(new Set([first(), first(), first()])).toEqual(
      new Set(['http://a:7700', 'http://b:7700/', 'http://c:7700']),
    );
    picker.down(b);
    picker.up(b);
    expect(picker.order()).toHaveLength(3);
  });
});
