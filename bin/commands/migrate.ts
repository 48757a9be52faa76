import type { Command } from 'commander';
import { createDb, ensureDatabase, migrateToLatest } from '../../shared/db.js';
import { cliConfig, databaseUrlOf } from '../cli-context.js';

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('create the database if needed and apply every pending migration')
    .action(async () => {
      const url = databaseUrlOf(cliConfig());
      if (await ensureDatabase(url)) console.log(`created database ${new URL(url).pathname.slice(1)}`);
      const { db, close } = createDb(url, { max: 1, applicationName: 'bizdir-migrate' });
      try {
        const result = await migrateToLatest(db, (line) => console.log(line));
        if ((result.results ?? []).length === 0) console.log('database is up to date');
      } finally {
        await close();
      }
    });
}
