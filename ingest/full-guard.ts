import { FeedFormatError } from '../shared/errors.js';
import { ImportOptionsError } from './feed-handler.js';

/**
 * `--full`'s guard against a file cut short. A plain CSV that a download cut at a line end looks
 * whole (a `.zip` or `.gz` cut short fails to read), and everything after the cut would be marked as
 * gone: companies of the register, or each named Org's Locations of a sheet whose rows interleave
 * Orgs. A month of the register marks about 1 % of it (docs/feeds.md). So a `--full` run that would
 * mark more than `--max-gone` percent of what it could mark fails instead, and marks nothing
 * (TooManyGoneError is thrown in the transaction that marks: it rolls back). Runs marking fewer than
 * MIN_GUARDED_GONE are not judged by share: a small register's or a business's own snapshot may well
 * drop half of what it had.
 */
export const DEFAULT_MAX_GONE_PERCENT = 10;
export const MIN_GUARDED_GONE = 1_000;

export class TooManyGoneError extends FeedFormatError {
  override name = 'TooManyGoneError';
}

/** `--max-gone`: a percentage above 0 and at most 100, written `10`, `2.5` or `10%`. */
export function maxGoneOption(raw: { full?: boolean | undefined; maxGone?: string | undefined }): {
  max_gone?: number;
} {
  if (raw.maxGone === undefined) return {};
  if (raw.full !== true) throw new ImportOptionsError('--max-gone applies to --full imports only');
  const m = /^\s*(\d{1,3}(?:\.\d+)?)\s*%?\s*$/.exec(raw.maxGone);
  const n = m ? Number(m[1]) : Number.NaN;
  if (!(n > 0 && n <= 100))
    throw new ImportOptionsError(
      `--max-gone must be a percentage above 0 and at most 100, such as 10%, not "${raw.maxGone}"`,
    );
  return { max_gone: n };
}

/**
 * Throws TooManyGoneError when `gone` of `open` (what was there to mark, `gone` included) is more
 * than the run allows. `what` names the records: "of the register's 5,700,000 open companies".
 */
export function checkGone(
  gone: number,
  open: number,
  what: (open: string) => string,
  maxPercent = DEFAULT_MAX_GONE_PERCENT,
): void {
  if (gone < MIN_GUARDED_GONE || open === 0) return;
  const percent = (100 * gone) / open;
  if (percent <= maxPercent) return;
  const share = (n: number) => `${n.toFixed(1).replace(/\.0$/, '')}%`;
  throw new TooManyGoneError(
    `--full would mark ${gone.toLocaleString('en')} ${what(open.toLocaleString('en'))} (${share(percent)}) as gone, ` +
      `more than --max-gone ${share(maxPercent)}: is a part missing, or a file cut short? Nothing was marked ` +
      `as gone (the rows read are loaded). If they really are gone, import again with --max-gone ${Math.min(100, Math.ceil(percent + 1))}%`,
  );
}
