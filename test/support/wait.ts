/**
 * Waiting in tests: poll for a state that arrives eventually (a worker's progress, the index
 * catching up, a log line), never sleep for a fixed time and hope.
 */

export interface WaitOptions {
  /** Give up after this long (default 20 s). */
  timeoutMs?: number;
  /** Look again after this long (default 100 ms). */
  pollMs?: number;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` until `ok` holds for its value, or until the time is up, and returns the last
 * value either way, so the assertion that follows shows what was seen. Without `ok`, `probe`
 * answers true or false itself: `expect(await eventually(async () => ...)).toBe(true)`.
 */
export function eventually(check: () => boolean | Promise<boolean>, options?: WaitOptions): Promise<boolean>;
export function eventually<T>(
  probe: () => T | Promise<T>,
  ok: (value: T) => boolean,
  options?: WaitOptions,
): Promise<T>;
export async function eventually<T>(
  probe: () => T | Promise<T>,
  okOrOptions?: ((value: T) => boolean) | WaitOptions,
  options: WaitOptions = {},
): Promise<T> {
  const ok = typeof okOrOptions === 'function' ? okOrOptions : (value: T) => value === true;
  const { timeoutMs = 20_000, pollMs = 100 } =
    typeof okOrOptions === 'function' ? options : (okOrOptions ?? {});
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value) || Date.now() > deadline) return value;
    await sleep(pollMs);
  }
}

/** Polls `check` until it holds; throws, naming `what`, once the time is up. */
export async function until(
  check: () => boolean | Promise<boolean>,
  options: WaitOptions & { what?: string } = {},
): Promise<void> {
  if (!(await eventually(check, options)))
    throw new Error(`timed out waiting for ${options.what ?? 'a condition'}`);
}
