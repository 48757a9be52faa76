import { type Meilisearch, MeilisearchApiError } from 'meilisearch';
import type { Db } from '../shared/db.js';
import { withFreshChanges } from './fresh-changes.js';
import { IndexOutdatedError, type IndexState, indexState } from './index-definition.js';
import type { ReplicaName } from './index-sync.repository.js';
import { isIndexNotReady, isUnavailable, meiliCall } from './meili-client.js';
import { queryOrgIds } from './org-query.js';
import type { PickedReplica, ReplicaPicker } from './replica-picker.js';
import { FRESH_MAX, namesOf, orgIdsForDomain, pendingOrgIds } from './search.read-model.js';
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
  /** Several Meilisearch replicas (search/replica-picker.ts): `meili` is then not used. */
  replicas?: ReplicaPicker;
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
  // Per Meilisearch: replicas are rebuilt one after the other.
  const key = `${meili.config.host} ${indexUid}`;
  const at = states.get(key);
  if (!fresh && at !== undefined && Date.now() - at < STATE_TTL_MS) return 'current';
  const state = await meiliCall(() => engineTimed(timing, () => indexState(meili, indexUid)));
  if (state === 'older') states.delete(key);
  else states.set(key, Date.now());
  return state;
}

/** The search; IndexOutdatedError while the live index is of an older format (the API's 503). */
export async function searchOrgs(
  deps: SearchOrgsDeps,
  query: Omit<OrgSearchQuery, 'domainOrgIds'>,
): Promise<OrgSearchPage> {
  const { timing } = deps;
  const read = <T>(fn: () => Promise<T>) => dbTimed(timing, fn);
  const domain = query.q === '' ? [] : read(() => orgIdsForDomain(deps.db, query.q, deps.domainSuffix));
  const pendingOf = (replica: ReplicaName) =>
    deps.freshChanges === false ? [] : read(() => pendingOrgIds(deps.db, FRESH_MAX, replica));
  if (!deps.replicas) {
    const [domainOrgIds, pending] = await Promise.all([domain, pendingOf(undefined)]);
    return searchOn(deps, deps.meili, pending, { ...query, domainOrgIds });
  }
  // Replicas in turn; one that does not answer is passed over and the search asked of the next. One
  // behind (more pending changes than the fresh merge covers) is used only when none is in step,
  // as one Meilisearch is while a bulk import is indexed: searched as it stands.
  const order = deps.replicas.order();
  let behind: PickedReplica | undefined;
  let failure: unknown;
  for (const [i, replica] of order.entries()) {
    const [domainOrgIds, pending] = await Promise.all([domain, pendingOf(replica.name)]);
    if (pending === null && (i < order.length - 1 || behind)) {
      behind ??= replica;
      continue;
    }
    try {
      const page = await searchOn(deps, replica.meili, pending, { ...query, domainOrgIds });
      deps.replicas.up(replica);
      return page;
    } catch (error) {
      if (!isUnavailable(error) && !isIndexNotReady(error) && !(error instanceof IndexOutdatedError))
        throw error;
      deps.replicas.down(replica);
      failure = error;
    }
  }
  if (behind) return searchOn(deps, behind.meili, null, { ...query, domainOrgIds: await domain });
  throw failure;
}

/** The search on one Meilisearch, with the pending changes merged (or none: the index as it stands). */
async function searchOn(
  deps: SearchOrgsDeps,
  meili: Meilisearch,
  pending: readonly number[] | null,
  full: OrgSearchQuery,
): Promise<OrgSearchPage> {
  const { timing } = deps;
  const read = <T>(fn: () => Promise<T>) => dbTimed(timing, fn);
  if ((await liveState(meili, deps.indexUid, false, timing)) === 'older')
    throw new IndexOutdatedError(deps.indexUid);
  const base = {
    meili,
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
      (await liveState(meili, deps.indexUid, true, timing)) === 'older'
    )
      throw new IndexOutdatedError(deps.indexUid);
    throw error;
  }
}
