/** A task a worker runs when it starts and then at an interval, until the worker stops. */
export interface PeriodicTask {
  /** Resolves after the first run (or its failure, which `onError` handled). */
  readonly ready: Promise<void>;
  /** Clears the timer, waits for the run in flight, then closes what the task holds. */
  stop(): Promise<void>;
}

/**
 * Runs `run` now and then every `intervalMs`, never two at once: a run still going when the next is
 * due is not stacked on, the first tick after it runs again. A failed run goes to `onError` and the
 * next tick tries again, so the timer never dies of an outage.
 */
export function runPeriodically(options: {
  run: () => Promise<void>;
  intervalMs: number;
  onError: (err: unknown) => void;
  close: () => Promise<void>;
}): PeriodicTask {
  let running: Promise<void> = Promise.resolve();
  let busy = false;
  const tick = () => {
    if (busy) return running;
    busy = true;
    running = options
      .run()
      .catch(options.onError)
      .finally(() => {
        busy = false;
      });
    return running;
  };
  const ready = tick();
  const timer = setInterval(tick, options.intervalMs);
  timer.unref();
  return {
    ready,
    async stop() {
      clearInterval(timer);
      await running;
      await options.close();
    },
  };
}
