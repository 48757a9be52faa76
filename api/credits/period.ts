/**
 * Subscription periods (docs/decisions.md, Accounts, credits and usage): a period starts at 00:00
 * UTC on the anchor day of a month and the next one a calendar month later; in a month shorter than
 * the anchor day, on its last day.
 */
export interface Period {
  start: Date;
  next: Date;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

function startIn(year: number, month: number, anchorDay: number): Date {
  // Date.UTC normalizes month overflow (month 12 is January of the next year) before we clamp.
  const first = new Date(Date.UTC(year, month, 1));
  const y = first.getUTCFullYear();
  const m = first.getUTCMonth();
  return new Date(Date.UTC(y, m, Math.min(anchorDay, daysInMonth(y, m))));
}

/** The period that contains `now` for a subscription anchored on `anchorDate` (YYYY-MM-DD). */
export function periodAt(anchorDate: string, now: Date): Period {
  const anchorDay = Number(anchorDate.slice(8, 10));
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  let start = startIn(y, m, anchorDay);
  if (start.getTime() > now.getTime()) start = startIn(y, m - 1, anchorDay);
  const next = startIn(start.getUTCFullYear(), start.getUTCMonth() + 1, anchorDay);
  return { start, next };
}
