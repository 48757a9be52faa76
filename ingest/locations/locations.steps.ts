import type { LabelBatch } from './locations.labels.js';

/** A promise with its resolve, settled once. */
class Step<T> {
  readonly promise: Promise<T>;
  resolve!: (value: T) => void;
  constructor() {
    this.promise = new Promise<T>((resolve) => {
      this.resolve = resolve;
    });
  }
}

/**
 * How far a batch of a location run has got, for the batch after it, whose transaction may begin
 * before this one's commits (LocationsLoader.loadBatch). Read committed: a statement the later batch
 * runs after this batch committed sees its writes; before, it sees none of them. So the later batch:
 *
 * - resolves its Orgs once this one has (`resolved`): a by-name Org this batch created is then in the
 *   run's cache, and the later batch does not create it again (it waits, if it creates other Orgs,
 *   for the Org lock this one holds until it commits);
 * - reads its stored Locations once it knows this one's store codes and whether it moved Locations
 *   (`matched`); if a code is shared or anything moved, it waits for this batch's commit first, so
 *   it never meets a key this batch writes (a repeated key, an adoption across Orgs) unseen;
 * - `--full`: records its Orgs' first rows after this one did (`firstsRecorded`), leaving out the
 *   Orgs this one met, whose first row is this one's (it would otherwise wait on this one's row);
 * - takes ids and labels after this one (`labelled`): they follow sheet order as they did when one
 *   batch ran at a time;
 * - writes Locations of an Org this batch created (a foreign key sees it only once committed), its
 *   label counters, moves of Locations and its checkpoint after this batch committed.
 *
 * No wait closes a cycle: a batch waits only for the batch before it, and every lock a later batch
 * takes before that batch committed (the Org lock, rows it inserts, keys of codes the batch before
 * does not name) is one the batch before no longer asks for at that point (it is past its Org step),
 * or never asks for (other codes, other ids and labels). A wait in Postgres (a new Org's row, under a
 * foreign key) is for the batch before, which never waits for the later one.
 */
export class BatchSteps {
  readonly resolved = new Step<void>();
  readonly matched = new Step<{ codes: ReadonlySet<string>; moved: boolean }>();
  readonly firstsRecorded = new Step<void>();
  readonly labelled = new Step<void>();
  /** By-name Orgs the batch created: the batch after writes no Location of theirs before this one commits. */
  createdOrgs: ReadonlySet<number> = new Set();

  /** `labels`: the batch's label allocator (forgotten by the run once the batch committed). */
  constructor(readonly labels: LabelBatch) {}

  /**
   * After the batch ended, failed or not: a later batch waiting on a step goes on (and fails at its
   * commit when this one failed; `moved` true makes it wait for that commit first).
   */
  settle(): void {
    this.resolved.resolve();
    this.matched.resolve({ codes: new Set(), moved: true });
    this.firstsRecorded.resolve();
    this.labelled.resolve();
  }
}
