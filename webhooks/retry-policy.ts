/**
 * When a failed request is tried again, and when an endpoint is given up on. An endpoint's events go
 * in order, so while its oldest request fails nothing after it is sent: the request is retried with
 * a growing delay (5 s, 15 s, 45 s, ... up to 6 h, each ±20 % so endpoints that failed together do
 * not come back together) for 5 days from its first failure, its last try at the 5-day mark; a
 * failure then disables the endpoint. A 429 or 503 with Retry-After waits as long as the receiver
 * asks (at most a day); a 410 Gone disables it at once.
 */
export const RETRY_POLICY = {
  firstDelayMs: 5_000,
  factor: 3,
  maxDelayMs: 6 * 3_600_000,
  jitter: 0.2,
  /** An endpoint with no 2xx for this long is disabled (retries go on until then: at least 3 days). */
  giveUpAfterMs: 5 * 86_400_000,
  /** The longest Retry-After honoured as given; a longer one is cut to this. */
  maxRetryAfterMs: 86_400_000,
  /** The shortest wait, whatever Retry-After says. */
  minDelayMs: 1_000,
} as const;

export type FailureVerdict = { kind: 'retry'; at: Date } | { kind: 'disable'; reason: string };

export interface Failure {
  /** The answer's status; null when there was none. */
  status: number | null;
  retryAfterMs: number | null;
  /** Consecutive failed requests, this one included (1 for the first). */
  failures: number;
  /** When the first of them failed. */
  failingSince: Date;
  now: Date;
  /** [0, 1): jitter's random source (tests pass a fixed one). */
  random?: () => number;
}

/** The backoff before retry number `failures` (1: after the first failure), without jitter. */
export function backoffMs(failures: number): number {
  const { firstDelayMs, factor, maxDelayMs } = RETRY_POLICY;
  return Math.min(maxDelayMs, firstDelayMs * factor ** Math.max(0, failures - 1));
}

export function afterFailure(f: Failure): FailureVerdict {
  if (f.status === 410) return { kind: 'disable', reason: 'the receiver answered 410 Gone' };
  const deadline = f.failingSince.getTime() + RETRY_POLICY.giveUpAfterMs;
  const now = f.now.getTime();
  if (now >= deadline) {
    return {
      kind: 'disable',
      reason: `no successful delivery for ${RETRY_POLICY.giveUpAfterMs / 86_400_000} days`,
    };
  }
  let delay: number;
  if ((f.status === 429 || f.status === 503) && f.retryAfterMs !== null) {
    delay = Math.min(RETRY_POLICY.maxRetryAfterMs, f.retryAfterMs);
  } else {
    const random = f.random ?? Math.random;
    delay = backoffMs(f.failures) * (1 + RETRY_POLICY.jitter * (2 * random() - 1));
  }
  delay = Math.max(RETRY_POLICY.minDelayMs, Math.round(delay));
  // The last try is at the deadline itself, so an endpoint is never disabled without one there.
  return { kind: 'retry', at: new Date(Math.min(now + delay, deadline)) };
}
