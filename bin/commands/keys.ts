import type { Command } from 'commander';
import { createKey, revokeKey, UnknownAccountError } from '../../api/accounts/account.service.js';
import { createDb } from '../../shared/db.js';
import { createRedis } from '../../shared/redis.js';
import { CliError, cliConfig, databaseUrlOf, redisUrlOf } from '../cli-context.js';

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('API keys');
  keys
    .command('create')
    .description('create another API key for an account (shown once)')
    .requiredOption('--account <id>', 'account_id')
    .option('--json', 'print one JSON object')
    .action(async (opts: { account: string; json?: boolean }) => {
      const { db, close } = createDb(databaseUrlOf(cliConfig()), { max: 1, applicationName: 'bizdir-cli' });
      try {
        const key = await createKey(db, opts.account);
        if (opts.json) console.log(JSON.stringify(key));
        else {
          console.log(`api_key  ${key.api_key}`);
          console.log(`The key is shown only now; revoke it with: bizdir keys revoke ${key.key_prefix}`);
        }
      } catch (error) {
        if (error instanceof UnknownAccountError) throw new CliError(error.message);
        throw error;
      } finally {
        await close();
      }
    });

  keys
    .command('revoke <prefix>')
    .description('revoke a key by its prefix (bzk_ and 8 characters, or the whole key)')
    .action(async (given: string) => {
      const prefix = given.trim().slice(0, 12);
      if (!/^bzk_[A-Za-z0-9_-]{8}$/.test(prefix))
        throw new CliError(`"${given}" is not a key prefix (bzk_ and 8 characters)`);
      const config = cliConfig();
      const { db, close } = createDb(databaseUrlOf(config), { max: 1, applicationName: 'bizdir-cli' });
      // Queue the one command until connected (a producer client would refuse it while connecting).
      const redis = createRedis(redisUrlOf(config), 'producer', {
        connectTimeout: 2_000,
        enableOfflineQueue: true,
      });
      try {
        const result = await revokeKey(db, redis, config.queuePrefix, prefix);
        if (!result.revoked) throw new CliError(`no live key has prefix ${prefix}`);
        console.log(`revoked ${prefix}`);
        if (!result.redisNotified) {
          console.error(
            'warning: Redis was not reachable; running API processes stop accepting the key within 5 minutes',
          );
        }
      } finally {
        redis.disconnect();
        await close();
      }
    });
}
