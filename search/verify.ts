import type { Meilisearch } from 'meilisearch';
import type { Db } from '../shared/db.js';
import { IndexOutdatedError, indexState } from './index-definition.js';
import { foldName, nameSortKey } from './name-text.js';
import { orgVersionsAfter } from './org-rows.read-model.js';

/**
 * Drift between Postgres and the live index: Orgs missing from the index, index entries with no
 * Org, and entries whose version or name differ from the row (stale). Both sides are read in id
 * order pages, so memory stays at two maps of (id -> version) even for the full register.
 */
export interface DriftKind {
  count: number;
  /** The first ids found (at most KEEP). */
  ids: number[];
}

export interface DriftReport {
  orgs: number;
  documents: number;
  missing: DriftKind;
  extra: DriftKind;
  stale: DriftKind;
}

/** At most this many ids of each kind are kept for the report; counts stay exact. */
const KEEP = 1_000;

interface Entry {
  v: number;
  n: string;
}

async function indexEntries(meili: Meilisearch, indexUid: string): Promise<Map<number, Entry>> {
  const out = new Map<number, Entry>();
  const index = meili.index(indexUid);
  const page = 10_000;
  for (let offset = 0; ; offset += page) {
    const res = await index.getDocuments({ fields: ['id', 'v', 'n'], limit: page, offset });
    for (const doc of res.results) out.set(Number(doc.id), { v: Number(doc.v), n: String(doc.n) });
    if (res.results.length < page) break;
  }
  return out;
}

export async function verifyIndex(db: Db, meili: Meilisearch, indexUid: string): Promise<DriftReport> {
  // An index of an older format is not compared: it is replaced whole by `bizdir reindex`.
  if ((await indexState(meili, indexUid)) === 'older') throw new IndexOutdatedError(indexUid);
  const nameKey = (name: string) => nameSortKey(foldName(name));
  const docs = await indexEntries(meili, indexUid);
  const report: DriftReport = {
    orgs: 0,
    documents: docs.size,
    missing: { count: 0, ids: [] },
    extra: { count: 0, ids: [] },
    stale: { count: 0, ids: [] },
  };
  const note = (kind: 'missing' | 'extra' | 'stale', id: number) => {
    report[kind].count++;
    if (report[kind].ids.length < KEEP) report[kind].ids.push(id);
  };
  let lastId = 0;
  for (;;) {
    const rows = await orgVersionsAfter(db, lastId, 50_000);
    if (rows.length === 0) break;
    lastId = rows[rows.length - 1]!.id;
    report.orgs += rows.length;
    for (const row of rows) {
      const doc = docs.get(row.id);
      if (!doc) note('missing', row.id);
      else if (doc.v !== row.version_number || doc.n !== nameKey(row.name)) note('stale', row.id);
      docs.delete(row.id);
    }
  }
  for (const id of docs.keys()) note('extra', id);
  return report;
}

export function driftCount(report: DriftReport): number {
  return report.missing.count + report.extra.count + report.stale.count;
}

export interface ReplicaDrift {
  /** The replica (its URL). */
  replica: string;
  report: DriftReport;
}

/**
 * `bizdir reindex --verify` over every replica (search/replicas.ts), one after the other (each reads
 * the whole index): a report per replica.
 */
export async function verifyReplicas(
  db: Db,
  replicas: readonly { label: string; meili: Meilisearch }[],
  indexUid: string,
): Promise<ReplicaDrift[]> {
  const out: ReplicaDrift[] = [];
  for (const r of replicas) out.push({ replica: r.label, report: await verifyIndex(db, r.meili, indexUid) });
  return out;
}
