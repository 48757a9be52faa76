import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importOneOrg, newAccount } from './support/api.js';
import { spawnCli } from './support/cli.js';
import { createTestDb, type TestDb } from './support/db.js';
import { TEST_REDIS_URL } from './support/env.js';
import { testQueuePrefix } from './support/redis.js';
import { freePort } from './support/tcp-proxy.js';
import { eventually } from './support/wait.js';

describe('bizdir serve', () => {
  let t: TestDb;
  const redisNs = testQueuePrefix();

  beforeAll(async () => {
    t = await createTestDb();
  });

  afterAll(async () => {
    await t?.drop();
    await redisNs.cleanup();
  });

  it('serves the API over HTTP and shuts down cleanly on SIGTERM', async () => {
    const domain = await importOneOrg(t.db);
    const { api_key } = await newAccount(t.db, 10);
    const port = await freePort();
    const child = spawnCli(['serve'], {
      DATABASE_URL: t.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: redisNs.prefix,
      PORT: String(port),
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const base = `http://127.0.0.1:${port}`;
      // Refused until the server listens: that is what is waited for.
      const up = await eventually(
        () =>
          fetch(`${base}/healthz`).then(
            (r) => r.ok,
            () => false,
          ),
        { timeoutMs: 30_000 },
      );
      expect(up).toBe(true);
      const res = await fetch(`${base}/v1/org/${domain}?api_key=${api_key}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { org: { public_domain: string }; request: { id: string } };
      expect(body.org.public_domain).toBe(domain);
      expect(res.headers.get('x-request-id')).toBe(body.request.id);
      const docs = await fetch(`${base}/docs`);
      expect(docs.status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
