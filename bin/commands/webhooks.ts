import type { Command } from 'commander';
import { findAccountByUid } from '../../api/accounts/account.repository.js';
import { accountUidOf } from '../../api/accounts/public-ids.js';
import { attemptView, operatorView } from '../../api/webhooks/webhook.view.js';
import { listEndpoints } from '../../api/webhooks/webhook-endpoint.repository.js';
import { getEndpoint, ownEndpointId } from '../../api/webhooks/webhook-endpoint.service.js';
import { createDb, type Db } from '../../shared/db.js';
import { HttpError } from '../../shared/errors.js';
import {
  disableDelivery,
  enableDelivery,
  listAttempts,
  OPERATOR_DISABLED,
} from '../../webhooks/delivery.repository.js';
import { CliError, cliConfig, databaseUrlOf } from '../cli-context.js';

type EndpointView = ReturnType<typeof operatorView>;

async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  const { db, close } = createDb(databaseUrlOf(cliConfig()), { max: 1, applicationName: 'bizdir-webhooks' });
  try {
    return await fn(db);
  } finally {
    await close();
  }
}

/** The endpoint's row id, or a one-line error naming the id. */
async function endpointId(db: Db, publicId: string): Promise<number> {
  try {
    return await ownEndpointId(db, null, publicId);
  } catch (error) {
    if (error instanceof HttpError && error.statusCode === 404)
      throw new CliError(`no webhook endpoint ${publicId}`);
    throw error;
  }
}

const when = (iso: string | null) => (iso === null ? '-' : iso.replace(/\.\d+Z$/, 'Z'));

function printList(endpoints: EndpointView[]): void {
  if (endpoints.length === 0) {
    console.log('no webhook endpoints');
    return;
  }
  const head = ['id', 'account', 'status', 'batch', 'last event', 'next try', 'types', 'url'];
  const rows = endpoints.map((e) => [
    e.id,
    e.account_id,
    e.status,
    e.batch ? 'yes' : 'no',
    e.last_event_id ?? '-',
    when(e.next_try),
    e.types.join(','),
    e.url,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  console.log(line(head));
  for (const r of rows) console.log(line(r));
}

function printEndpoint(e: EndpointView, attempts: ReturnType<typeof attemptView>[]): void {
  const rows: [string, string][] = [
    ['id', e.id],
    ['account', e.account_id],
    ['url', e.url],
    ['types', e.types.join(', ')],
    ['batch', e.batch ? 'yes (up to 100 events a request)' : 'no (one event a request)'],
    ['status', e.status_reason ? `${e.status}: ${e.status_reason}` : e.status],
    ['created', when(e.created)],
    ['last event', e.last_event_id ?? '- (none delivered yet)'],
    ['last success', when(e.last_success)],
    ['failing since', when(e.failing_since)],
    ['failures', String(e.failures)],
    ['next try', when(e.next_try)],
    ['replaying', e.replaying ? 'yes' : 'no'],
    ['old secret', e.previous_secret_expires ? `signs too until ${when(e.previous_secret_expires)}` : '-'],
  ];
  for (const [k, v] of rows) console.log(`${k.padEnd(14)} ${v}`);
  if (attempts.length === 0) return;
  console.log(`latest requests (${attempts.length}):`);
  for (const a of attempts) {
    const events =
      a.event_ids.length === 1
        ? a.event_ids[0]
        : `${a.event_ids.length} events ${a.event_ids[0]}..${a.event_ids.at(-1)}`;
    const answer = a.status === null ? 'no answer' : String(a.status);
    const next = a.next_try ? `  next try ${when(a.next_try)}` : '';
    console.log(
      `  ${when(a.attempted)}  ${answer.padEnd(9)} ${String(a.duration_ms).padStart(6)} ms  ${events}${next}`,
    );
    if (a.error) console.log(`    ${a.error}`);
  }
}

/** `bizdir webhooks list|show|disable|enable`: the operators' view of every account's webhook endpoints. */
export function registerWebhooks(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description("list, show, disable or enable accounts' webhook endpoints");
  webhooks
    .command('list', { isDefault: true })
    .description('every webhook endpoint, oldest first: status, where delivery stands')
    .option('--account <id>', 'only the endpoints of this account (acct_…)')
    .option('--json', 'one JSON array of endpoints')
    .action(async (opts: { account?: string; json?: boolean }) =>
      withDb(async (db) => {
        let accountId: number | null = null;
        if (opts.account !== undefined) {
          const account = await findAccountByUid(db, accountUidOf(opts.account));
          if (!account) throw new CliError(`no account has id ${opts.account}`);
          accountId = account.id;
        }
        const now = new Date();
        const endpoints = (await listEndpoints(db, accountId)).map((r) => operatorView(r, now));
        if (opts.json) console.log(JSON.stringify(endpoints));
        else printList(endpoints);
      }),
    );
  webhooks
    .command('show')
    .description('one endpoint: status, cursor, retries and its latest requests')
    .argument('<id>', 'endpoint id (we_…)')
    .option('--json', 'the endpoint as one JSON object, with its latest requests as `deliveries`')
    .action(async (id: string, opts: { json?: boolean }) =>
      withDb(async (db) => {
        const rowId = await endpointId(db, id);
        const view = operatorView(await getEndpoint(db, rowId), new Date());
        const attempts = (await listAttempts(db, rowId, 20)).map(attemptView);
        if (opts.json) console.log(JSON.stringify({ ...view, deliveries: attempts }));
        else printEndpoint(view, attempts);
      }),
    );
  webhooks
    .command('disable')
    .description('stop sending to an endpoint (its owner cannot undo it with a replay; `enable` does)')
    .argument('<id>', 'endpoint id (we_…)')
    .option('--json', 'the endpoint afterwards as one JSON object')
    .action(async (id: string, opts: { json?: boolean }) =>
      withDb(async (db) => {
        const rowId = await endpointId(db, id);
        await disableDelivery(db, rowId, OPERATOR_DISABLED, new Date());
        const view = operatorView(await getEndpoint(db, rowId), new Date());
        if (opts.json) console.log(JSON.stringify(view));
        else console.log(`webhook endpoint ${view.id} disabled`);
      }),
    );
  webhooks
    .command('enable')
    .description('send to a disabled endpoint again, from where its delivery stopped')
    .argument('<id>', 'endpoint id (we_…)')
    .option('--json', 'the endpoint afterwards as one JSON object')
    .action(async (id: string, opts: { json?: boolean }) =>
      withDb(async (db) => {
        const rowId = await endpointId(db, id);
        const enabled = await enableDelivery(db, rowId, new Date());
        const view = operatorView(await getEndpoint(db, rowId), new Date());
        if (opts.json) console.log(JSON.stringify(view));
        else console.log(`webhook endpoint ${view.id} ${enabled ? 'enabled' : 'was not disabled'}`);
      }),
    );
}
