import type { Command } from 'commander';
import {
  type AccountOverview,
  accountOverviews,
  createAccount,
  UnknownAccountError,
  updateAccount,
} from '../../api/accounts/account.service.js';
import type { RateLimitRule } from '../../api/credits/redis-counters.js';
import { createDb, type Db } from '../../shared/db.js';
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

/** `N/SECONDS` (N requests per SECONDS seconds), or `none` for no limit. */
export function parseRateLimit(value: string): RateLimitRule | null {
  if (value.trim().toLowerCase() === 'none') return null;
  const m = /^\s*(\d{1,9})\s*\/\s*(\d{1,7})\s*$/.exec(value);
  const max = Number(m?.[1]);
  const windowSeconds = Number(m?.[2]);
  if (!m || max < 1 || windowSeconds < 1 || windowSeconds > 31 * 24 * 3600) {
    throw new CliError(
      `--rate-limit must be N/SECONDS (N >= 1 requests per 1 to 2678400 seconds, e.g. 600/300) or none, got "${value}"`,
    );
  }
  return { max, windowSeconds };
}

async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  const { db, close } = createDb(databaseUrlOf(cliConfig()), { max: 1, applicationName: 'bizdir-cli' });
  try {
    return await fn(db);
  } catch (error) {
    if (error instanceof UnknownAccountError) throw new CliError(error.message);
    throw error;
  } finally {
    await close();
  }
}

const rateLimitText = (a: AccountOverview) =>
  a.rate_limit ? `${a.rate_limit.requests} requests per ${a.rate_limit.seconds} s` : 'none';

function printAccount(a: AccountOverview): void {
  const rows: [string, string][] = [
    ['account_id', a.account_id],
    ['name', a.name],
    ['subscription_id', a.subscription_id],
    [
      'plan',
      `${a.credits_per_period} credits per period (periods start on day ${a.anchor_date.slice(8)} from ${a.anchor_date})`,
    ],
    ['period', `${a.period_start} to ${a.next_period_start}`],
    ['credits used', String(a.credits_used)],
    ['credits left', String(a.credits_left)],
    ['rate limit', rateLimitText(a)],
  ];
  for (const [k, v] of rows) console.log(`${k.padEnd(16)} ${v}`);
  if (a.keys.length === 0) console.log(`${'keys'.padEnd(16)} none`);
  a.keys.forEach((k, i) => {
    const when = k.revoked_at ? `revoked ${k.revoked_at}` : `created ${k.created_at}`;
    console.log(`${(i === 0 ? 'keys' : '').padEnd(16)} ${k.prefix}  ${k.status.padEnd(7)}  ${when}`);
  });
}

function printTable(accounts: AccountOverview[]): void {
  const header = ['ACCOUNT', 'NAME', 'PERIOD START', 'USED', 'LEFT', 'OF', 'RATE LIMIT', 'KEYS'];
  const lines = accounts.map((a) => [
    a.account_id,
    a.name.length > 30 ? `${a.name.slice(0, 29)}…` : a.name,
    a.period_start.slice(0, 10),
    String(a.credits_used),
    String(a.credits_left),
    String(a.credits_per_period),
    a.rate_limit ? `${a.rate_limit.requests}/${a.rate_limit.seconds}s` : 'none',
    `${a.keys.filter((k) => k.status === 'active').length} active, ${a.keys.filter((k) => k.status === 'revoked').length} revoked`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  for (const l of [header, ...lines])
    console.log(
      l
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
}

export function registerAccounts(program: Command): void {
  const accounts = program.command('accounts').description('API accounts and their data-credit plans');
  accounts
    .command('create')
    .description('create an account with a subscription and its first API key (shown once)')
    .requiredOption('--name <name>', 'account name')
    .requiredOption('--credits <n>', 'data credits per period')
    .option('--anchor <YYYY-MM-DD>', 'day the periods start from (default: today, UTC)')
    .option('--rate-limit <N/SECONDS>', 'at most N requests per SECONDS seconds (default: none)')
    .option('--json', 'print one JSON object')
    .action(
      async (opts: {
        name: string;
        credits: string;
        anchor?: string;
        rateLimit?: string;
        json?: boolean;
      }) => {
        const credits = parseCredits(opts.credits);
        const anchorDate = parseAnchor(opts.anchor ?? new Date().toISOString().slice(0, 10));
        const rateLimit = opts.rateLimit === undefined ? null : parseRateLimit(opts.rateLimit);
        if (opts.name.trim() === '') throw new CliError('--name must not be empty');
        const created = await withDb((db) =>
          createAccount(db, { name: opts.name.trim(), credits, anchorDate, rateLimit }),
        );
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
          if (rateLimit)
            console.log(`rate limit       ${rateLimit.max} requests per ${rateLimit.windowSeconds} s`);
          console.log(`api_key          ${created.api_key}`);
          console.log(`The key is shown only now; revoke it with: bizdir keys revoke ${created.key_prefix}`);
        }
      },
    );

  accounts
    .command('list')
    .description('every account: current period, credits used and left, rate limit, keys')
    .option('--json', 'print one JSON object')
    .action(async (opts: { json?: boolean }) => {
      const all = await withDb((db) => accountOverviews(db, new Date()));
      if (opts.json) console.log(JSON.stringify({ accounts: all }));
      else if (all.length === 0) console.log('no accounts yet; create one with: bizdir accounts create');
      else printTable(all);
    });

  accounts
    .command('show <id>')
    .description('one account: plan, current period, credits used and left, rate limit, keys (prefixes only)')
    .option('--json', 'print one JSON object')
    .action(async (id: string, opts: { json?: boolean }) => {
      const [account] = await withDb((db) => accountOverviews(db, new Date(), id));
      if (!account) throw new CliError(`no account has id ${id}`);
      if (opts.json) console.log(JSON.stringify(account));
      else printAccount(account);
    });

  accounts
    .command('update <id>')
    .description(
      "change an account's credits per period and/or rate limit (API processes see it within a minute)",
    )
    .option('--credits <n>', 'data credits per period')
    .option('--rate-limit <N/SECONDS|none>', 'at most N requests per SECONDS seconds, or none')
    .option('--json', 'print the account as one JSON object')
    .action(async (id: string, opts: { credits?: string; rateLimit?: string; json?: boolean }) => {
      if (opts.credits === undefined && opts.rateLimit === undefined) {
        throw new CliError('nothing to change: give --credits and/or --rate-limit');
      }
      const change = {
        ...(opts.credits !== undefined ? { credits: parseCredits(opts.credits) } : {}),
        ...(opts.rateLimit !== undefined ? { rateLimit: parseRateLimit(opts.rateLimit) } : {}),
      };
      const account = await withDb((db) => updateAccount(db, id, change));
      if (opts.json) console.log(JSON.stringify(account));
      else printAccount(account);
    });
}
