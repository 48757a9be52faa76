/**
 * Errors that carry an HTTP status and a client-safe reason. The API's one error handler turns them
 * into `{ code, message: "<Status text>: <reason>" }`; anything else becomes a plain 500.
 */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly statusCode: number,
    readonly reason: string,
  ) {
    super(reason);
  }
}

export const badRequest = (reason: string) => new HttpError(400, reason);
export const notFound = (reason: string) => new HttpError(404, reason);
export const forbidden = (reason = 'Invalid api_key parameter value') => new HttpError(403, reason);
export const serviceUnavailable = (reason: string) => new HttpError(503, reason);

/**
 * The base of bizdir's own failures. `retryable` is the one rule a job's retries follow: true when
 * trying again may succeed (a network error, a lost race), false when it cannot (a bad file, a missing
 * source). Each error is classified once, where it arises; the job only reads the flag.
 */
export class BizdirError extends Error {
  override name = 'BizdirError';
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** A feed file that cannot be imported at all (wrong format, missing columns): the run fails, nothing changes. */
export class FeedFormatError extends BizdirError {
  override name = 'FeedFormatError';
  constructor(message: string) {
    super(message, false);
  }
}
