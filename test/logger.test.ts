import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../shared/config.js';
import { resolveLogFormat } from '../shared/logger.js';

/** The console switch: human lines on a terminal, JSON for pipes, LOG_FORMAT to force. */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PROBE = path.join(ROOT, 'test/support/log-probe.ts');

function probe(env: Record<string, string>, opts: { tty: boolean; fd?: 1 | 2 }) {
  const node = `${process.execPath} --import tsx ${PROBE} ${opts.fd ?? 1}`;
  // `script` runs the probe on a pseudo-terminal, as a person's shell would.
  const [cmd, args] = opts.tty ? ['script', ['-qec', node, '/dev/null']] : ['sh', ['-c', node]];
  const r = spawnSync(cmd, args, {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return { stdout: r.stdout, stderr: r.stderr };
}

// Each case starts node processes (through tsx), seconds each on a busy machine.
describe('log format', { timeout: 120_000 }, () => {
  it('auto is pretty on a terminal and JSON otherwise; json and pretty force it', () => {
    expect(resolveLogFormat('auto', true)).toBe('pretty');
    expect(resolveLogFormat('auto', false)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow(
      'Invalid configuration: LOG_FORMAT must be one of auto, json, pretty',
    );
  });

  it('a command on a terminal prints human lines (secrets still redacted)', () => {
    const colored = probe({}, { tty: true }).stdout;
    expect(colored).toContain('\u001b['); // colored on a terminal
    // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI color codes are what is removed.
    const stdout = colored.replace(/\u001b\[[0-9;]*m/g, '');
    expect(stdout).not.toContain('{"level"');
    expect(stdout).toMatch(/\d\d:\d\d:\d\d\.\d{3}.*INFO.*probe line/);
    expect(stdout).toContain('answer: 42');
    expect(stdout).not.toContain('bzk_secret');
    expect(stdout).not.toContain('debug line');
  });

  it('the same command in a pipe prints one JSON object per line', () => {
    const { stdout } = probe({}, { tty: false });
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!);
    expect(line).toMatchObject({
      level: 30,
      msg: 'probe line',
      answer: 42,
      service: 'probe',
      api_key: '[redacted]',
    });
  });

  it('LOG_FORMAT=json on a terminal is JSON; LOG_FORMAT=pretty in a pipe is human; stderr works alike', () => {
    const json = probe({ LOG_FORMAT: 'json' }, { tty: true });
    expect(JSON.parse(json.stdout.trim())).toMatchObject({ msg: 'probe line' });
    const pretty = probe({ LOG_FORMAT: 'pretty' }, { tty: false });
    expect(pretty.stdout).toMatch(/INFO.*probe line/);
    expect(pretty.stdout).not.toContain('\u001b['); // no colors where there is no terminal
    const toStderr = probe({ LOG_FORMAT: 'json' }, { tty: false, fd: 2 });
    expect(toStderr.stdout).toBe('');
    expect(JSON.parse(toStderr.stderr.trim())).toMatchObject({ msg: 'probe line' });
  });
});
