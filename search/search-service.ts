import { type Meilisearch, MeilisearchApiError } from 'meilisearch';
import type { Db } from '../shared/db.js';
import { withFreshChanges } from './fresh-changes.js';
import { IndexOutdatedError, type IndexState, indexState } from './index-definition.js';
import { meiliCall } from './meili-client.js';
import { queryOrgIds } from './org-query.js';
import { namesOf, orgIdsForDomain, pendingOrgIds } from './search.read-model.js';
import type { OrgSearchPage, OrgSearchQuery } from './search-query.js';
import { dbTimed, engineTimed, type SearchTiming } from './search-timing.js';

/**
 * The search use case: exact-domain matches come from Postgres (stable ids, current and old public
 * labels, which the index does not hold), name matches and the order from Meilisearch, and the
 * changes the index has not applied yet from Postgres (fresh-changes.ts).
 */
export interface SearchOrgsDeps {
  db: Db;
  meili: Meilisearch;
  indexUid: string;
  domainSuffix: string;
  /**
   * Search the changes the index has not applied yet beside it (fresh-changes.ts): default on.
   * Off, the answer is the index's alone (tests of the sync itself).
   */
  freshChanges?: boolean;
  /** Where the request's time goes (the API's Server-Timing header): Meilisearch calls and Postgres reads. */
  timing?: SearchTiming;
}

/**
 * Whether the live index is of this release's format, remembered for a moment: read again at most
 * every STATE_TTL_MS while it is (a Meilisearch call saved on almost every search), and on every
 * search while it is not, so the first search after `bizdir reindex` swapped the new index in finds it.
 */
const STATE_TTL_MS = 2_000;
const states = new Map<string, number>();

async function liveState(
  meili: Meilisearch,
  indexUid: string,
  fresh: boolean,
  timing: SearchTiming | undefined,
): Promise<IndexState> {
  const at = states.get(indexUid);
  if (!fresh && at !== undefined && Date.now() - at < STATE_TTL_MS) return 'current';
  const state = await meiliCall(() => engineTimed(timing, () => indexState(meili, indexUid)));
  if (state === 'older') states.delete(indexUid);
  else states.set(indexUid, Date.now());
  return state;
}

/** The search; IndexOutdatedError while the live index is of an older format (the API's 503). */
export async function searchOrgs(
  deps: SearchOrgsDeps,
  query: Omit<OrgSearchQuery, 'domainOrgIds'>,
): Promise<OrgSearchPage> {
  const { timing } = deps;
  const read = <T>(fn: () => Promise<T>) => dbTimed(timing, fn);
  const [domainOrgIds, pending] = await Promise.all([
    query.q === '' ? [] : read(() => orgIdsForDomain(deps.db, query.q, deps.domainSuffix)),
    deps.freshChanges === false ? [] : read(() => pendingOrgIds(deps.db)),
  ]);
  const full = { ...query, domainOrgIds };
  if ((await liveState(deps.meili, deps.indexUid, false, timing)) === 'older')
    throw new IndexOutdatedError(deps.indexUid);
  const base = {
    meili: deps.meili,
    indexUid: deps.indexUid,
    namesOf: (ids: readonly number[]) => read(() => namesOf(deps.db, ids)),
    ...(timing ? { timing } : {}),
  };
  try {
    if (!pending) return { ...(await queryOrgIds(base, full)), catchingUp: true };
    if (pending.length === 0) return await queryOrgIds(base, full);
    return await withFreshChanges(deps.db, { ...base, exclude: pending }, full);
  } catch (error) {
    // Refused by Meilisearch (a sort key or filter it does not know): an index of an older format
    // put in place since its state was read is told as such; anything else is the error it is.
    if (
      error instanceof MeilisearchApiError &&
      error.response.status < 500 &&
      (await liveState(deps.meili, deps.indexUid, true, timing)) === 'older'
    )
      throw new IndexOutdatedError(deps.indexUid);
    throw error;
  }
}
