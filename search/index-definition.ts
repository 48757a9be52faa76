import { type Meilisearch, MeilisearchApiError, type Settings } from 'meilisearch';
import {
  indexExists,
  MeiliTaskFailedError,
  succeeded,
  TASK_WAIT_MS,
  taskWaitOptions,
} from './meili-client.js';

/**
 * The Org index, declared once: applied at start-up (ensureOrgIndex) and to every index a
 * reindex builds, so the live index and a rebuilt one can never differ in settings.
 *
 * Documents are small (org-document.ts): the name's trigram words (`g`, the only searchable
 * field), its suspect links (`l`), and the sort keys. Meilisearch
 * only has to intersect word bitmaps and sort: typo tolerance is off, proximity is kept per
 * attribute only (no word-pair database: the phrase of a term's trigrams means "all of them"),
 * and the only ranking rule is the sort. `maxTotalHits` is above any register size so
 * `estimatedTotalHits` is the exact size of the candidate set.
 */
export const ORG_INDEX_PRIMARY_KEY = 'id';

/**
 * Bumped when the document shape or the sort keys change. This release serves only its own format:
 * an index of an older one is recognised (isCurrentFormat) and answers 503 until `bizdir reindex`
 * has built this format beside it and swapped it in (docs/search.md, "Index format and upgrades").
 */
export const ORG_INDEX_FORMAT = 7;

const equalityOnly = { facetSearch: false, filter: { equality: true, comparison: false } } as const;

/** What the index needs to be searched and synced; the sort and filter structures come after a bulk load. */
export const ORG_INDEX_LOAD_SETTINGS: Settings = {
  searchableAttributes: ['g'],
  // `n` and `u` are the keys of the name and `updated` orders (`d` the API computes from the id):
  // merge-checked.ts reads them to merge a term's true suspects into a page.
  displayedAttributes: ['id', 'd', 'v', 'n', 'u'],
  rankingRules: ['sort'],
  typoTolerance: { enabled: false },
  proximityPrecision: 'byAttribute',
  prefixSearch: 'indexingTime',
  facetSearch: false,
  pagination: { maxTotalHits: 100_000_000 },
  faceting: { maxValuesPerFacet: 1 },
  stopWords: [],
  synonyms: {},
  // `g` holds code words (name-text.ts), not words of a language. Declared as one language,
  // Meilisearch skips detecting one per document, which takes memory while documents load (figures
  // in docs/benchmarks.md).
  localizedAttributes: [{ attributePatterns: ['g'], locales: ['eng'] }],
};

/** The name key: "equals" and "starts with" for sort=relevance. */
const NAME_KEY_FILTER = {
  attributePatterns: ['n'],
  features: { facetSearch: false, filter: { equality: true, comparison: true } },
};

export const ORG_INDEX_SETTINGS: Settings = {
  ...ORG_INDEX_LOAD_SETTINGS,
  filterableAttributes: [
    // Orgs are named in filters by their stable domain `d` (already a sort key), not by `id`: a
    // unique value per Org costs the index bytes per Org in each facet database it is in.
    { attributePatterns: ['l', 'd'], features: equalityOnly },
    NAME_KEY_FILTER,
  ],
  // `np` and `db` are coarse buckets of `n` and `d`, and `n1` and `d1` (their first character)
  // coarser ones, sorted on first: Meilisearch then skips whole buckets before a deep page instead
  // of walking every value (org-document.ts). `updated` is `u` (ms), then `ua` (or `ud`
  // descending), then `d`: the groups of Orgs one import transaction wrote with the same `updated`
  // are skipped whole, and the one a page starts in is split by the fraction of `ua` (the stable
  // domain's bucket) before `d` is walked.
  sortableAttributes: ['n', 'd', 'n1', 'np', 'u', 'ua', 'ud', 'd1', 'db'],
};

/** The sort keys this release's queries use: an index lacking one of them is of an older format. */
const CURRENT_SORTABLE: readonly string[] = ORG_INDEX_SETTINGS.sortableAttributes ?? [];

/**
 * How an existing index's format is told: by its sort keys. Every format bumped so far added or
 * replaced a sort key, so an index of an older one lacks some key this release sorts on (format 6
 * and earlier lack `n1`, `ua`, `ud` and `d1`). An index with no sort keys at all has not had its
 * settings applied yet (ensureOrgIndex applies them), and an index a later release built has keys
 * of its own beside these: both are served as this format.
 */
export function isCurrentFormat(sortable: readonly string[]): boolean {
  return sortable.length === 0 || CURRENT_SORTABLE.every((key) => sortable.includes(key));
}

/** What an index is to this release: absent, of this release's format, or of an older one. */
export type IndexState = 'missing' | 'current' | 'older';

/** The state of the index `uid` (one read of its sort keys). */
export async function indexState(client: Meilisearch, uid: string): Promise<IndexState> {
  try {
    const sortable = await client.index(uid).getSortableAttributes();
    return isCurrentFormat(sortable) ? 'current' : 'older';
  } catch (error) {
    if (error instanceof MeilisearchApiError && error.response.status === 404) return 'missing';
    throw error;
  }
}

/**
 * The live index is of an older format: nothing is searched or written in it until `bizdir reindex`
 * has built this format beside it and swapped it in. The message is for operators (logs, the CLI);
 * clients get a 503 that names no component (api/search/search.routes.ts).
 */
export class IndexOutdatedError extends Error {
  override name = 'IndexOutdatedError';
  constructor(readonly indexUid: string) {
    super(
      `search index ${indexUid} is of an older format than this release's (${ORG_INDEX_FORMAT}): ` +
        'run `bizdir reindex` to rebuild it without downtime; searches answer 503 until then',
    );
  }
}

/**
 * Creates the index when missing and applies the declared settings (a no-op task when they are
 * already in place). Used at start-up for the live index and by reindex for each new index. An
 * index of an older format is left as it is (applying these settings would not make its documents
 * this format's): the caller says so, and `bizdir reindex` replaces it.
 */
export async function ensureOrgIndex(
  client: Meilisearch,
  uid: string,
  settings: Settings = ORG_INDEX_SETTINGS,
): Promise<Exclude<IndexState, 'missing'>> {
  if (!(await indexExists(client, uid))) {
    // Queued behind whatever Meilisearch is processing (a large index's sync batches take seconds
    // each): waited for as long as any settings task, not the client's default wait.
    const task = await client
      .createIndex(uid, { primaryKey: ORG_INDEX_PRIMARY_KEY })
      .waitTask(taskWaitOptions(TASK_WAIT_MS));
    // Two starters racing: the loser's creation fails with index_already_exists, which is fine.
    if (task.status === 'failed' && task.error?.code !== 'index_already_exists') {
      throw new MeiliTaskFailedError(`creating index ${uid} failed: ${task.error?.message}`);
    }
    await succeeded(client.index(uid).updateSettings(settings));
    return 'current';
  }
  const sortable = await client.index(uid).getSortableAttributes();
  if (!isCurrentFormat(sortable)) return 'older';
  // An index a later release built sorts on keys this release does not know: applying this
  // release's settings would drop them (and make Meilisearch rework its facets), so it is left as it
  // is and served with this release's rules (a later format only adds keys).
  if (sortable.some((key) => !CURRENT_SORTABLE.includes(key))) return 'current';
  // The language the words are tokenized in is set when an index is built: changing it makes
  // Meilisearch tokenize every document again in one task (minutes on a large index, with the sync
  // queued behind it), so start-up sends it only to an index that has no settings yet.
  const { localizedAttributes: _kept, ...rest } = settings;
  await succeeded(client.index(uid).updateSettings(sortable.length === 0 ? settings : rest));
  return 'current';
}
