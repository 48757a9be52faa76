import { describe, expect, it } from 'vitest';
import { MissingProcessorError, PROCESSORS, queueProcessor, type WorkerDeps } from '../jobs/registry.js';
import { QUEUES } from '../shared/queues.js';

/** The check happens before any processor is built, so no real deps are needed. */
const deps = {} as WorkerDeps;

describe('job registry', () => {
  it('has a processor for every job name of every queue', () => {
    for (const [queue, names] of Object.entries(QUEUES)) {
      const table = (PROCESSORS as Record<string, Record<string, unknown> | undefined>)[queue];
      for (const name of names) expect(typeof table?.[name], `${queue}/${name}`).toBe('function');
    }
  });

  it('refuses to build a queue processor when a job name has none', () => {
    const saved = PROCESSORS.import;
    try {
      PROCESSORS.import = {};
      expect(() => queueProcessor('import', deps)).toThrow(MissingProcessorError);
      expect(() => queueProcessor('import', deps)).toThrow(
        /queue "import" has no processor for job import-feed/,
      );
    } finally {
      PROCESSORS.import = saved;
    }
  });
});
