import { sql, type Transaction } from 'kysely';
import type { Db } from '../../shared/db.js';
import type { Database } from '../../shared/tables.js';
import { labelsTableOf, stageTableOf, turnsTableOf } from './registrar.stage.js';

/**
 * The two tables behind a register run's public labels (registrar.labels.ts), both dropped with the
 * run's stage (registrar.stage.ts dropStage):
 *
 * - `import_stage_<run>_labels` (number, label): the label handed out to each company of the run that
 *   needs one. Logged, unlike the stage: a label handed out has moved its counter, so a label lost in
 *   a server crash would be handed out afresh with another number, and a rebuilt deployment would no
 *   longer agree with one that never crashed. The stage itself is read again after a crash.
 * - `import_stage_<run>_turns` (pos, number, base, owner): the companies still waiting for a label, in
 *   their turn. Made again at every start of the merge from the stage, so it is unlogged.
 */
type Trx = Transaction<Database>;
const labels = (runId: number) => sql.table(labelsTableOf(runId));
const turns = (runId: number) => sql.table(turnsTableOf(runId));

export interface Turn {
  pos: number;
  number: string;
  base: string;
  /** The Org of a renamed company (it may get a label it held before back); null for a new one. */
  owner: number | null;
}

export async function createRunLabels(db: Db, runId: number): Promise<void> {
  await sql`
    create table if not exists ${labels(runId)} (number text not null, label text not null)
    with (autovacuum_enabled = false)`.execute(db);
  // Each label once (a label is handed out once), and the allocator's lookups by label (labelsAmong).
  // The turns come by base, so each reservation's labels land in neighbouring places of this index.
  await sql`
    create unique index if not exists ${sql.id(`${labelsTableOf(runId)}_label`)}
    on ${labels(runId)} (label)`.execute(db);
}

/**
 * Each company once, and the chunks' lookups by company number (keptLabelsOf, keepLabels' replace):
 * built once the labels are handed out. Built during the pass, it would take an insert at a random
 * place of a large index per company (the numbers come in no order), which on a register of
 * millions makes the pass wait on reads of index pages.
 */
export async function indexRunLabels(db: Db, runId: number): Promise<void> {
  await sql`
    create unique index if not exists ${sql.id(`${labelsTableOf(runId)}_number`)}
    on ${labels(runId)} (number)`.execute(db);
}

/**
 * Lines up the companies of the run that need a label and have none yet, by base (byte order: the
 * same in every database, whatever its collation), then by their winning row (part, then line): the
 * new companies and the renamed Orgs. Base order keeps each reservation's counters and labels
 * together in their indexes. A row recognised unchanged holds no name (its Org is as it was); a
 * company whose Org a committed chunk wrote already has its name, so a resumed merge lines up only
 * the companies not handed a label yet, in the same order.
 */
export async function lineUpTurns(db: Db, runId: number, country: string): Promise<void> {
  await sql`drop table if exists ${turns(runId)}`.execute(db);
  await sql`
    create unlogged table ${turns(runId)} with (autovacuum_enabled = false) as
    select row_number() over (order by coalesce(w.slug, 'org') collate "C", w.part_no, w.line) as pos,
      w.number, coalesce(w.slug, 'org') as base,
      o.id as owner
    from (
      select distinct on (number) number, part_no, line, name, slug from ${sql.table(stageTableOf(runId))}
      order by number, part_no desc, line desc) w
    left join orgs o on o.registration_country = ${country} and o.registration_number = w.number
    where w.name is not null and (o.id is null or o.name is distinct from w.name)
      and not exists (select 1 from ${labels(runId)} l where l.number = w.number)`.execute(db);
  await sql`alter table ${turns(runId)} add primary key (pos)`.execute(db);
}

/** The next `limit` companies waiting for a label after turn `after`. */
export async function nextTurns(db: Db, runId: number, after: number, limit: number): Promise<Turn[]> {
  const { rows } = await sql<Turn>`
    select pos, number, base, owner from ${turns(runId)} where pos > ${after} order by pos limit ${limit}`.execute(
    db,
  );
  return rows.map((r) => ({ ...r, pos: Number(r.pos), owner: r.owner === null ? null : Number(r.owner) }));
}

export async function dropTurns(db: Db, runId: number): Promise<void> {
  await sql`drop table if exists ${turns(runId)}`.execute(db);
}

/**
 * Remembers the labels handed out to these companies (in the reservation's transaction). `replace`:
 * some of them may hold a label already (one taken by another writer since); otherwise none does and
 * a plain insert does (no speculative insertion per row).
 */
export async function keepLabels(
  trx: Trx,
  runId: number,
  given: readonly { number: string; label: string }[],
  replace: boolean,
): Promise<void> {
  if (given.length === 0) return;
  await sql`
    insert into ${labels(runId)} (number, label)
    select * from unnest(${given.map((l) => l.number)}::text[], ${given.map((l) => l.label)}::text[])
    ${replace ? sql`on conflict (number) do update set label = excluded.label` : sql``}`.execute(trx);
}

/** The labels handed out to these companies (by company number). */
export async function keptLabelsOf(
  trx: Trx | Db,
  runId: number,
  numbers: readonly string[],
): Promise<Map<string, string>> {
  if (numbers.length === 0) return new Map();
  const { rows } = await sql<{ number: string; label: string }>`
    select l.number, l.label from unnest(${numbers}::text[]) as k(number)
    cross join lateral (select number, label from ${labels(runId)} where number = k.number limit 1) l`.execute(
    trx,
  );
  return new Map(rows.map((r) => [r.number, r.label]));
}

/** Of `candidates`, the labels handed out to companies of the run (written or not). */
export async function labelsAmong(trx: Trx, runId: number, candidates: readonly string[]): Promise<string[]> {
  if (candidates.length === 0) return [];
  const { rows } = await sql<{ label: string }>`
    select label from ${labels(runId)} where label = any(${candidates}::text[])`.execute(trx);
  return rows.map((r) => r.label);
}
