import type { Meilisearch } from 'meilisearch';
import { ensureOrgIndex } from '../../search/index-definition.js';
import { createMeiliClient } from '../../search/meili-client.js';
import { syncOutbox } from '../../search/org-sync.js';
import { searchOrgs } from '../../search/search-service.js';
import type { Db } from '../../shared/db.js';
import { testMeiliConnection } from './meili.js';

/** A test's own index of the Orgs in `db`, as the worker first builds it: created, then the outbox synced. */
export async function buildTestIndex(db: Db, meili: Meilisearch, indexUid: string): Promise<void> {
  await ensureOrgIndex(meili, indexUid);
  await syncOutbox({ db, meili, indexUid });
}

/**
 * A name-sorted search of the index itself, not of the changes searched beside it
 * (fresh-changes.ts): what the index alone holds.
 */
export function searchIndexOnly(
  db: Db,
  indexUid: string,
  q: string,
  opts: { limit?: number; domainSuffix?: string } = {},
) {
  return searchOrgs(
    {
      db,
      meili: createMeiliClient(testMeiliConnection()),
      indexUid,
      domainSuffix: opts.domainSuffix ?? 'bizdir.test',
      freshChanges: false,
    },
    { q, sort: 'name', limit: opts.limit ?? 10, offset: 0 },
  );
}
