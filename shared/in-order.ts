/**
 * A bounded window of work in flight whose results are handled in the order the work was started:
 * the pipeline of every bulk writer (import chunks and batches, index document tasks). Up to
 * `depth` pieces run at once; adding one more first settles the oldest, so the caller's loop
 * blocks exactly when the window is full.
 *
 * Failure: the first rejection reaches the caller through add() or drain(). The pieces still in
 * flight are not abandoned silently: the caller's `finally` calls quiesce(), so no transaction or
 * task outlives the loop that started it.
 */
export interface InOrderOptions {
  /** Wraps every wait (for example to stop waiting when a signal aborts). */
  wait?: <T>(work: Promise<T>) => Promise<T>;
}

export class InOrder<T> {
  readonly #pending: Promise<T>[] = [];
  readonly #depth: number;
  readonly #settle: (value: T) => unknown;
  readonly #wait: <V>(work: Promise<V>) => Promise<V>;

  constructor(depth: number, settle: (value: T) => unknown, options: InOrderOptions = {}) {
    this.#depth = Math.max(1, Math.trunc(depth));
    this.#settle = settle;
    this.#wait = options.wait ?? ((work) => work);
  }

  /** How many pieces are in flight. */
  get size(): number {
    return this.#pending.length;
  }

  /** Adds a piece of work; when the window is full, waits for the oldest and settles it first. */
  async add(work: Promise<T>): Promise<void> {
    // Its rejection is awaited in order (settleOldest); until then it must not count as unhandled.
    work.catch(() => undefined);
    this.#pending.push(work);
    if (this.#pending.length >= this.#depth) await this.#settleOldest();
  }

  /** Settles every piece still in flight, in order. */
  async drain(): Promise<void> {
    while (this.#pending.length > 0) await this.#settleOldest();
  }

  /** Waits until no piece is running, whatever each one's outcome (for a `finally`). */
  async quiesce(): Promise<void> {
    await Promise.allSettled(this.#pending);
  }

  async #settleOldest(): Promise<void> {
    const oldest = this.#pending[0]!;
    const value = await this.#wait(oldest);
    this.#pending.shift();
    await this.#settle(value);
  }
}
