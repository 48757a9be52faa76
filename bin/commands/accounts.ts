import type { Command } from 'commander';
import { createAccount } from '../../api/accounts/account.service.js';
import { createDb } from '../../shared/db.js';
import { CliError, cliConfig, databaseUrlOf } from '../cli-context.js';

export function parseCredits(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 2_000_000_000) {
    throw new CliError(`--credits must be a whole number from 0 to 2000000000, got "${value}"`);
  }
  return Number(value);
}

export function parseAnchor(value: string): string {
  const date = new Date(`${value}T00:00:00Z`);
  if (
    !/^\d{4}-\d{2}-\d{2}$/.test(value) ||
    Number.isNaN(date.getTime()) ||
    date.toISOString().slice(0, 10) !== value
  ) {
    throw new CliError(`--anchor must be a date YYYY-MM-DD, got "${value}"`);
  }
  return value;
}

export function registerAccounts(program: Command): void {
  const accounts = program.command('accounts').description('API accounts and their data-credit plans');
  accounts
    .command('create')
    .description('create an account with a subscription and its first API key (shown once)')
    .requiredOption('--name <name>', 'account name')
    .requiredOption('--credits <n>', 'data credits per period')
    .option('--anchor <YYYY-MM-DD>', 'day the periods start from (default: today, UTC)')
    .option('--json', 'print one JSON object')
    .action(async (opts: { name: string; credits: string; anchor?: string; json?: boolean }) => {
      const credits = parseCredits(opts.credits);
      const anchorDate = parseAnchor(opts.anchor ?? new Date().toISOString().slice(0, 10));
      if (opts.name.trim() === '') throw new CliError('--name must not be empty');
      const { db, close } = createDb(databaseUrlOf(cliConfig()), { max: 1, applicationName: 'bizdir-cli' });
      try {
        const created = await createAccount(db, { name: opts.name.trim(), credits, anchorDate });
        if (opts.json) {
          console.log(
            JSON.stringify({
              account_id: created.account_id,
              subscription_id: created.subscription_id,
              api_key: created.api_key,
            }),
          );
        } else {
          console.log(`account_id       ${created.account_id}`);
          console.log(
            `subscription_id  ${created.subscription_id}  (${credits} credits per period from ${anchorDate})`,
          );
          console.log(`api_key          ${created.api_key}`);
          console.log(`The key is shown only now; revoke it with: bizdir keys revoke ${created.key_prefix}`);
        }
      } finally {
        await close();
      }
    });
}
