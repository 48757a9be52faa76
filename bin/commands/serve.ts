import type { Command } from 'commander';
import { buildApp } from '../../api/app.js';
import { createLogger } from '../../shared/logger.js';
import { resolvedConfig } from '../cli-context.js';

/** Time allowed for in-flight requests (and their credit commits) before the process exits anyway. */
const SHUTDOWN_DEADLINE_MS = 10_000;

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP API (HOST, PORT)')
    .action(async () => {
      // Resolved URLs: with none configured, serve uses the services of a running
      // `bizdir start`, like every other command, instead of the fixed local defaults.
      const config = resolvedConfig();
      const logger = createLogger(config, { service: 'bizdir-api' });
      const app = await buildApp({ config, logger });
      await app.listen({ host: config.host, port: config.port });

      let closing = false;
      const shutdown = (signal: string) => {
        if (closing) return;
        closing = true;
        logger.info({ signal }, 'shutting down');
        const deadline = setTimeout(() => {
          logger.error('shutdown deadline passed; exiting');
          process.exit(1);
        }, SHUTDOWN_DEADLINE_MS);
        deadline.unref();
        // close() stops accepting, lets in-flight requests finish, flushes the usage ledger, closes pools.
        app.close().then(
          () => process.exit(0),
          (err: unknown) => {
            logger.error({ err }, 'shutdown failed');
            process.exit(1);
          },
        );
      };
      process.once('SIGTERM', () => shutdown('SIGTERM'));
      process.once('SIGINT', () => shutdown('SIGINT'));
    });
}
