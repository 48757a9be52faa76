#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { reportCliError } from './cli-context.js';
import { registerAccounts } from './commands/accounts.js';
import { registerImport } from './commands/import.js';
import { registerImports } from './commands/imports.js';
import { registerKeys } from './commands/keys.js';
import { registerMigrate } from './commands/migrate.js';
import { registerReindex } from './commands/reindex.js';
import { registerSchedule } from './commands/schedule.js';
import { registerServe } from './commands/serve.js';
import { registerStart } from './commands/start.js';
import { registerWebhooks } from './commands/webhooks.js';
import { registerWorker } from './commands/worker.js';

// Output piped into a reader that stops early (`bizdir imports list | head`): end quietly, as Unix
// tools do, instead of crashing on the unhandled EPIPE with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

const program = new Command('bizdir')
  .description('bizdir: business-directory data service')
  .showHelpAfterError()
  .exitOverride();

// One line per command module; each module owns its sub-commands.
registerMigrate(program);
registerImport(program);
registerImports(program);
registerWorker(program);
registerAccounts(program);
registerKeys(program);
registerServe(program);
registerSchedule(program);
registerStart(program);
registerReindex(program);
registerWebhooks(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) process.exitCode = error.exitCode;
  else process.exitCode = reportCliError(error);
}
