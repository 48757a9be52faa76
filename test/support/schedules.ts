import type { Job } from 'bullmq';

/** A `run-schedule` job for the slot `slot`, as BullMQ hands it to the processor on its last attempt. */
export function scheduleFiring(schedule: string, slot: string, id = `test-${schedule}-${slot}`) {
  return {
    id,
    data: { schedule },
    opts: { prevMillis: Date.parse(slot), attempts: 1 },
    timestamp: Date.now(),
    attemptsMade: 0,
  } as unknown as Job<{ schedule: string }, unknown, 'run-schedule'>;
}
