import { BizdirError } from '../../shared/errors.js';

/** The worker is shutting down: the run stopped cleanly between batches and resumes elsewhere. */
export class ImportInterruptedError extends BizdirError {
  override name = 'ImportInterruptedError';
  constructor(message: string) {
    super(message, true);
  }
}

/** An import that did not finish; not `retryable` when trying again cannot help (bad file, missing source). */
export class ImportFailedError extends BizdirError {
  override name = 'ImportFailedError';
}

/**
 * An attempt's failure as the run records it. Bizdir's own errors say whether a retry can help
 * (classified where they arise: a bad file, a missing source, corrupt compressed data, a lost race);
 * anything else (a lost connection, a deadlock) may pass.
 */
export function failureOf(error: unknown): ImportFailedError {
  if (error instanceof ImportFailedError) return error;
  if (error instanceof BizdirError) return new ImportFailedError(error.message, error.retryable);
  const message = error instanceof Error ? error.message : String(error);
  return new ImportFailedError(message, true);
}
