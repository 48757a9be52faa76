#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { reportCliError } from './cli-context.js';
import { registerMigrate } from './commands/migrate.js';
import { registerSchedule } from './commands/schedule.js';

const program = new Command('bizdir')
  .description('bizdir: business-directory data service')
  .showHelpAfterError()
  .exitOverride();

// One line per command module; each module owns its sub-commands.
registerMigrate(program);
registerSchedule(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) process.exitCode = error.exitCode;
  else process.exitCode = reportCliError(error);
}
