import { describe, expect, it } from 'vitest';
import { runPeriodically } from '../jobs/periodic.js';
import { sleep } from './support/wait.js';

describe('runPeriodically', () => {
  it('runs at once and then each interval, never two at once, through failures, and stop waits for the run in flight', async () => {
    let runs = 0;
    let inFlight = 0;
    let most = 0;
    const errors: unknown[] = [];
    let closed = false;
    const task = runPeriodically({
      intervalMs: 10,
      run: async () => {
        runs++;
        inFlight++;
        most = Math.max(most, inFlight);
        await sleep(35);
        inFlight--;
        if (runs === 2) throw new Error('away');
      },
      onError: (err) => errors.push(err),
      close: async () => {
        closed = true;
      },
    });
    await task.ready;
    expect(runs).toBe(1);
    await sleep(200);
    await task.stop();
    expect(inFlight).toBe(0);
    expect(closed).toBe(true);
    expect(most).toBe(1);
    expect(runs).toBeGreaterThanOrEqual(3);
    expect(errors).toHaveLength(1);
    const after = runs;
    await sleep(50);
    expect(runs).toBe(after);
  });
});
