import { toV1OrgDocument } from './legacy-v1/org-document.js';
import type { IndexFormat } from './meili-client.js';
import { foldName, nameSortKey, nameTerms } from './name-text.js';

/** One Org in the index. Short field names keep the payload small. */
export interface OrgDocument {
  /** orgs.id */
  id: number;
  /** The name's trigram words (name-text.ts), space-separated: the only searchable field. */
  g: string;
  /** Links that make the Org a suspect for some terms; absent for most names. */
  l?: string[];
  /** The folded name as an order-preserving ASCII key (nameSortKey): the `name` sort. */
  n: string;
  /** Stable domain id (orgs.uid): the tie-break of every sort. */
  d: string;
  /** orgs.updated in epoch milliseconds: the `updated` sort. */
  u: number;
  /** orgs.version_number: `reindex --verify` compares it to find stale entries. */
  v: number;
}

export interface OrgRowForIndex {
  id: number;
  uid: string;
  name: string;
  updated: Date;
  version_number: number;
}

export function toOrgDocument(row: OrgRowForIndex): OrgDocument {
  const folded = foldName(row.name);
  const terms = nameTerms(folded);
  return {
    id: row.id,
    g: terms.words.join(' '),
    ...(terms.links.length > 0 ? { l: terms.links } : {}),
    n: nameSortKey(folded),
    d: row.uid,
    u: row.updated.getTime(),
    v: row.version_number,
  };
}

/** Documents for an index of the given format (an upgraded installation may still run a v1 index). */
export function documentsFor(format: IndexFormat, rows: readonly OrgRowForIndex[]): object[] {
  return format === 1 ? rows.map(toV1OrgDocument) : rows.map(toOrgDocument);
}
