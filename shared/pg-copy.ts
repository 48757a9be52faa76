import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CompiledQuery, type QueryExecutorProvider } from 'kysely';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

/**
 * Bulk writes through `COPY ... FROM STDIN` inside a Kysely transaction. COPY's text format costs
 * Postgres far less to read than the same rows as a JSON document or as array parameters, the
 * parsing being most of a row's cost (docs/journal/2026-11-22.md, 04:36), and it still fires every
 * constraint, foreign key and generated column.
 *
 * Kysely does not hand out its pg client, and COPY needs it. So every client of a pool made by
 * createDb answers one marker statement, without sending it to the server, with itself as the only
 * row (see `answerClientMarker`); run through a transaction, the marker yields that transaction's
 * own client.
 */
export const CLIENT_MARKER = '-- bizdir: the pg client of this connection';

/** Installs the marker on a pool client (createDb does this for every new client). */
export function answerClientMarker(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (...args: unknown[]) =>
    args[0] === CLIENT_MARKER
      ? Promise.resolve({ command: 'SELECT', rowCount: 1, rows: [{ client }], fields: [] })
      : query(...args);
}

/** The pg client a transaction runs on. */
export async function clientOf(trx: QueryExecutorProvider): Promise<pg.PoolClient> {
  const { rows } = await trx
    .getExecutor()
    .executeQuery<{ client: pg.PoolClient }>(CompiledQuery.raw(CLIENT_MARKER));
  const client = rows[0]?.client;
  if (!client) throw new Error('this Kysely instance was not made by createDb: no COPY access');
  return client;
}

export type CopyValue = string | number | boolean | null;

/** Four native scans beat one regular expression here (about 50 against 150 ns on typical values). */
const hasSpecial = (v: string) =>
  v.indexOf('\\') !== -1 || v.indexOf('\n') !== -1 || v.indexOf('\t') !== -1 || v.indexOf('\r') !== -1;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** One value in COPY text format: `\N` for null, backslash escapes for the four special characters. */
export function copyField(value: CopyValue): string {
  if (value === null) return '\\N';
  if (typeof value !== 'string') return String(value);
  return hasSpecial(value) ? value.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c]!) : value;
}

/** One row in COPY text format, line end included. */
export const copyLine = (values: readonly CopyValue[]): string => `${values.map(copyField).join('\t')}\n`;

/**
 * Streams rows (from copyLine) into `table (columns)` within the transaction. Lines are sent in
 * chunks, so a large batch is never one giant string.
 */
export async function copyInto(
  trx: QueryExecutorProvider,
  table: string,
  columns: readonly string[],
  lines: readonly string[],
): Promise<void> {
  if (lines.length === 0) return;
  const client = await clientOf(trx);
  const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;
  const stream = client.query(copyFrom(`copy ${ident(table)} (${columns.map(ident).join(', ')}) from stdin`));
  await pipeline(Readable.from(chunks(lines, 500)), stream);
}

function* chunks(lines: readonly string[], size: number): Generator<string> {
  for (let i = 0; i < lines.length; i += size) yield lines.slice(i, i + size).join('');
}
