import cronParser from 'cron-parser';

/**
 * Cron expressions are read by cron-parser, the same library (and major version) BullMQ uses to
 * fire job schedulers, so `schedule set` accepts exactly what the workers will run and
 * `schedule list` shows the same next run the workers will use.
 */

export class ScheduleDefinitionError extends Error {
  override name = 'ScheduleDefinitionError';
}

export function assertTimeZone(tz: string): void {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
  } catch {
    throw new ScheduleDefinitionError(
      `unknown time zone "${tz}" (use an IANA name such as Europe/London or UTC)`,
    );
  }
}

export function assertCron(expression: string, tz: string): void {
  const fields = expression.trim().split(/\s+/);
  if (fields.length < 5 || fields.length > 6) {
    throw new ScheduleDefinitionError(
      `invalid cron expression "${expression}": expected 5 fields (minute hour day month weekday)`,
    );
  }
  try {
    cronParser.parseExpression(expression, { tz });
  } catch (error) {
    throw new ScheduleDefinitionError(`invalid cron expression "${expression}": ${(error as Error).message}`);
  }
}

/** The next firing after `from`, in UTC. */
export function nextRun(expression: string, tz: string, from: Date = new Date()): Date {
  return cronParser.parseExpression(expression, { tz, currentDate: from }).next().toDate();
}
