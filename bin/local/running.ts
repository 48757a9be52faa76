import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { isAlive } from './child-process.js';

/**
 * Where the services started by `bizdir start` are, so that other commands run in a second
 * terminal (`bizdir import ...`, `bizdir schedule ...`) reach the same embedded Postgres and Redis
 * without the user copying URLs. Written with mode 600: the URLs carry the local passwords.
 */
export interface RunningServices {
  /** The `bizdir start` process that owns the services; the file is ignored once it is gone. */
  pid: number;
  databaseUrl?: string;
  redisUrl?: string;
  meiliUrl?: string;
  meiliMasterKey?: string;
}

export const runningFile = (dataDir: string) => path.join(path.resolve(dataDir), 'services.json');

export async function writeRunning(dataDir: string, services: RunningServices): Promise<void> {
  const file = runningFile(dataDir);
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, `${JSON.stringify(services, null, 2)}\n`, { mode: 0o600 });
  await fs.rename(tmp, file);
}

export async function removeRunning(dataDir: string): Promise<void> {
  const file = runningFile(dataDir);
  const current = readRunning(dataDir);
  // Only the owner removes it, so a second start that failed does not orphan the first's record.
  if (current === undefined || current.pid === process.pid) await fs.rm(file, { force: true });
}

/** The services of a live `bizdir start` using this data folder, or undefined. Synchronous: read once per command. */
export function readRunning(dataDir: string): RunningServices | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(runningFile(dataDir), 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const record = parsed as Record<string, unknown>;
  if (typeof record.pid !== 'number' || !isAlive(record.pid)) return undefined;
  const str = (key: string) => (typeof record[key] === 'string' ? (record[key] as string) : undefined);
  return {
    pid: record.pid,
    databaseUrl: str('databaseUrl'),
    redisUrl: str('redisUrl'),
    meiliUrl: str('meiliUrl'),
    meiliMasterKey: str('meiliMasterKey'),
  };
}
