import { describe, expect, it } from 'vitest';
import {
  ignoreError,
  isConnectionError,
  isRedisConnectionError,
  observeLater,
  outageOf,
  outageTracker,
  reportRedisOutages,
} from '../shared/outage.js';

/** The outage tracker (shared/outage.ts): one line per outage, one for its end, with how long it lasted. */

type Line = { level: 'warn' | 'info' | 'debug'; fields: Record<string, unknown>; msg: string };

function recorder() {
  const lines: Line[] = [];
  const at = (level: Line['level']) => (fields: Record<string, unknown>, msg: string) => {
    lines.push({ level, fields, msg });
  };
  return { lines, log: { warn: at('warn'), info: at('info'), debug: at('debug') } as never };
}

describe('outage tracker', () => {
  it('logs the first error of an outage once, suppresses the repeats, and logs the recovery once with its duration', () => {
    const { lines, log } = recorder();
    let now = 1_000_000;
    const tracker = outageTracker(log, 'Redis', { now: () => now });
    tracker.up(); // no outage yet: nothing to say
    expect(lines).toEqual([]);

    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6390'), { code: 'ECONNREFUSED' });
    tracker.down(refused);
    expect(tracker.isDown).toBe(true);
    for (let i = 0; i < 25; i++) {
      now += 100;
      tracker.down(new Error(`attempt ${i}`));
    }
    expect(lines).toEqual([
      {
        level: 'warn',
        fields: { service: 'Redis', err: 'connect ECONNREFUSED 127.0.0.1:6390' },
        msg: 'Redis connection lost; retrying',
      },
    ]);

    now += 1_700; // 4.2 s after the first error
    tracker.up();
    tracker.up();
    expect(tracker.isDown).toBe(false);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toEqual({
      level: 'info',
      fields: { service: 'Redis', down_ms: 4_200, errors: 26 },
      msg: 'Redis connection recovered after 4.2 s',
    });

    // The next outage is a new one: logged again.
    tracker.down(new Error('Connection is closed.'));
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ level: 'warn', fields: { err: 'Connection is closed.' } });
  });

  it('names the error by its code when the message lacks it (a refused connection on IPv4 and IPv6)', () => {
    const { lines, log } = recorder();
    const both = new AggregateError(
      [Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' })],
      '',
    );
    Object.assign(both, { code: 'ECONNREFUSED' });
    outageTracker(log, 'Postgres').down(both);
    expect(lines[0]?.fields.err).toBe('connect ECONNREFUSED ::1:5432');
  });

  it('a client gets the tracker watching it; an unwatched one is quiet (debug)', () => {
    const { lines, log } = recorder();
    const client = {};
    reportRedisOutages(log, client);
    outageOf(client).down(new Error('x'));
    outageOf(client).down(new Error('y'));
    expect(lines.map((l) => l.msg)).toEqual(['Redis connection lost; retrying']);
    expect(outageOf({}, 'Redis').service).toBe('Redis');
    const quiet = recorder();
    const tracker = outageTracker(quiet.log, 'Redis', { lostLevel: 'debug' });
    tracker.down(new Error('x'));
    tracker.up();
    expect(quiet.lines.map((l) => l.level)).toEqual(['debug', 'debug']);
  });

  it('tells connection errors from query errors', () => {
    const code = (c: string, m = 'x') => Object.assign(new Error(m), { code: c });
    expect(isConnectionError(code('ECONNREFUSED'))).toBe(true);
    expect(isConnectionError(code('57P01', 'terminating connection due to administrator command'))).toBe(
      true,
    );
    expect(isConnectionError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionError(new Error('x', { cause: code('ECONNRESET') }))).toBe(true);
    expect(isConnectionError(code('23505', 'duplicate key value'))).toBe(false);
    expect(isConnectionError(new Error('syntax error at or near "selec"'))).toBe(false);
    expect(isConnectionError('ECONNREFUSED')).toBe(false);
    expect(isRedisConnectionError(new Error('Connection is closed.'))).toBe(true);
    expect(isRedisConnectionError(Object.assign(new Error('m'), { name: 'MaxRetriesPerRequestError' }))).toBe(
      true,
    );
    expect(isRedisConnectionError(new Error('Connection terminated unexpectedly'))).toBe(false);
  });

  it('observeLater keeps the rejection for whoever awaits the promise', async () => {
    const p = observeLater(Promise.reject(new Error('late')));
    await new Promise((r) => setTimeout(r, 10)); // no unhandled rejection meanwhile
    await expect(p).rejects.toThrow('late');
  });

  it('ignoreError logs what it ignores at debug, with why', () => {
    const { lines, log } = recorder();
    ignoreError('closing a probe', log)(new Error('already closed'));
    expect(lines).toEqual([
      { level: 'debug', fields: { err: 'already closed' }, msg: 'ignored: closing a probe' },
    ]);
  });
});
