import type { Db } from '../../shared/db.js';
import { type AlsoHeld, labelHolders, reserveSlugs } from '../public-domains.js';
import {
  createRunLabels,
  dropTurns,
  indexRunLabels,
  keepLabels,
  labelsAmong,
  lineUpTurns,
  nextTurns,
} from './registrar.labels.repository.js';

/**
 * The public labels of a register run's new and renamed companies (docs/decisions.md, Public labels).
 *
 * Before the merge writes its first chunk, every company of the run that needs a label is handed one,
 * by base, then in the order of its winning row in the run (part, then line), whatever the batch
 * size, the merge's chunks and lanes, the number of workers or a resumed run: allocateSlugs hands
 * labels out as if one at a time (public-domains.ts), so cutting the turns into groups changes nothing. The labels are
 * kept in the run's labels table (registrar.labels.repository.ts) in the reservation's transaction;
 * a chunk reads its companies' labels from there.
 *
 * The labels table is also what the run holds and has not written yet: every reservation treats its
 * labels as taken (`alsoHeld`). Chunks are written side by side and commit in key order; had an
 * earlier chunk been handed a label that a later, uncommitted chunk had already written, its insert
 * would wait for the later chunk's commit, which waits for the earlier chunk: a cycle through
 * JavaScript that Postgres cannot see (seen at 1M rows with 20,000-company chunks).
 */

/** Companies handed their labels per reservation (any size gives the same labels). */
const TURNS_PER_RESERVATION = 5000;

const heldByRun =
  (runId: number): AlsoHeld =>
  (trx, candidates) =>
    labelsAmong(trx, runId, candidates);

/**
 * Hands out the labels of every company of the run that has none yet, in turn. Resumable: each group
 * of turns is reserved and kept in one transaction, and a merge started again lines up only the
 * companies still without a label, in the same order.
 */
export async function labelRun(db: Db, runId: number, country: string): Promise<void> {
  await createRunLabels(db, runId);
  await lineUpTurns(db, runId, country);
  for (let after = 0; ; ) {
    const turns = await nextTurns(db, runId, after, TURNS_PER_RESERVATION);
    if (turns.length === 0) break;
    await reserveSlugs(
      db,
      'org',
      turns.map((t) => ({ base: t.base, ...(t.owner === null ? {} : { ownerId: t.owner }) })),
      (trx, slugs) =>
        keepLabels(
          trx,
          runId,
          turns.map((t, k) => ({ number: t.number, label: slugs[k]! })),
          false,
        ),
      heldByRun(runId),
    );
    after = turns.at(-1)!.pos;
  }
  await indexRunLabels(db, runId);
  await dropTurns(db, runId);
}

export interface LabelRequest {
  number: string;
  base: string;
  /** The Org, for a rename (it may get a label it held before back). */
  ownerId?: number;
  /** The label the run handed out to this company (null: none). */
  kept: string | null;
}

/**
 * A chunk's labels: each company's label from the run's labels table while nobody else holds it.
 * Two cases need a new one, reserved at once (in the chunk's order, outside its transaction) and kept
 * for the run: another writer (another feed's new Org) took the label since it was handed out, and
 * the chunk was rolled back on the unique key (MergeRaceError); or a company lined up no turn (rows
 * read again after they went stale, ingest/run/merge.ts mergeRereading).
 */
export async function labelsFor(db: Db, runId: number, requests: readonly LabelRequest[]): Promise<string[]> {
  if (requests.length === 0) return [];
  const out = requests.map((r) => r.kept);
  const kept = out.flatMap((label) => (label === null ? [] : [label]));
  if (kept.length > 0) {
    const holders = await labelHolders(db, 'org', kept);
    requests.forEach((r, i) => {
      const owners = out[i] === null ? undefined : holders.get(out[i]!);
      if (owners && [...owners].some((owner) => owner !== r.ownerId)) out[i] = null;
    });
  }
  const todo = requests.flatMap((r, i) => (out[i] === null ? [{ r, i }] : []));
  const fresh = await reserveSlugs(
    db,
    'org',
    todo.map(({ r }) => ({ base: r.base, ...(r.ownerId === undefined ? {} : { ownerId: r.ownerId }) })),
    (trx, slugs) =>
      keepLabels(
        trx,
        runId,
        todo.map(({ r }, k) => ({ number: r.number, label: slugs[k]! })),
        // A company that lined up no turn has no row in the run's labels table yet.
        todo.some(({ r }) => r.kept !== null),
      ),
    heldByRun(runId),
  );
  todo.forEach(({ i }, k) => {
    out[i] = fresh[k]!;
  });
  return out as string[];
}
