import { describe, expect, it } from 'vitest';
import { InOrder } from '../shared/in-order.js';

const later = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe('InOrder', () => {
  it('settles in the order work was added, whatever order it finishes in', async () => {
    const settled: number[] = [];
    const window = new InOrder<number>(3, (n) => settled.push(n));
    await window.add(later(30, 1));
    await window.add(later(5, 2));
    await window.add(later(15, 3));
    await window.add(later(1, 4));
    await window.drain();
    expect(settled).toEqual([1, 2, 3, 4]);
  });

  it('keeps at most depth pieces in flight', async () => {
    let running = 0;
    let most = 0;
    const work = async () => {
      running++;
      most = Math.max(most, running);
      await later(5, 0);
      running--;
      return 0;
    };
    const window = new InOrder<number>(2, () => undefined);
    for (let i = 0; i < 6; i++) await window.add(work());
    await window.drain();
    expect(most).toBe(2);
  });

  it('throws the first failure and lets quiesce wait for the rest', async () => {
    const window = new InOrder<number>(3, () => undefined);
    let lastDone = false;
    await window.add(Promise.reject(new Error('boom')));
    await window.add(
      later(20, 2).then((v) => {
        lastDone = true;
        return v;
      }),
    );
    await expect(window.drain()).rejects.toThrow('boom');
    expect(lastDone).toBe(false);
    await window.quiesce();
    expect(lastDone).toBe(true);
  });
});
