/**
 * A search as the API asks it and as it is answered: the sorts, the limits, the query (with the
 * Orgs whose domain equals the term, found in Postgres) and the page of ids. Results are ids only:
 * the API reads the Orgs from Postgres.
 */
export const ORG_SORTS = ['name', '-name', 'updated', '-updated', 'relevance'] as const;
export type OrgSort = (typeof ORG_SORTS)[number];

export const MAX_Q_LENGTH = 200;
export const MAX_WINDOW = 10_000;

export interface OrgSearchQuery {
  /** The raw term; empty lists every Org. */
  q: string;
  sort: OrgSort;
  limit: number;
  offset: number;
  /** Orgs whose stable or public domain (old labels included) equals q, found in Postgres. */
  domainOrgIds: readonly number[];
}

export interface OrgSearchPage {
  ids: number[];
  total: number;
  /**
   * True when the answer is the index's as it stands, not the database's exact one: more changes
   * wait to be indexed than are searched beside it (search-service.ts). Such an answer is not cached.
   */
  catchingUp?: boolean;
}

/** An Org's name and stable id, as the relevance tiers and the domain matches read them from Postgres. */
export interface NameRow {
  name: string;
  uid: string;
}
