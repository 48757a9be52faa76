import type { Settings } from 'meilisearch';

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

/** Bumped when the document shape changes; an index of another format needs `bizdir reindex`. */
export const ORG_INDEX_FORMAT = 7;

/**
 * The sortable attributes of format 6, which sorted on the buckets `np` and `db` without the
 * one-character keys `n1` and `d1` before them, and `updated` on `u` then `db`. It is recognised by
 * `np` without `ua` and served until `bizdir reindex` (format 6's rules are also right for any index
 * holding its keys).
 */
export const V6_SORTABLE = ['n', 'd', 'np', 'u', 'db'] as const;

/**
 * The sortable attributes of format 5, whose name bucket `nb` was the name key's first three
 * characters for every name. It is recognised by `nb` without `t` and served until `bizdir reindex`.
 */
export const V5_SORTABLE = ['n', 'd', 'nb', 'u', 'db'] as const;

/**
 * The sortable attributes of format 4, which also sorted `updated` on `t` (two unique strings per
 * Org) and filtered Orgs by `id`. It is recognised by `t` beside the buckets and served until
 * `bizdir reindex`.
 */
export const V4_SORTABLE = ['n', 't', 'd', 'nb', 'tb', 'db'] as const;

/**
 * The sortable attributes of format 3, which sorted on the exact keys alone (no buckets). It is
 * recognised by them and served until `bizdir reindex`.
 */
export const V3_SORTABLE = ['n', 't', 'd'] as const;

/**
 * The sortable attributes of the previous format (2), which sorted `updated` on `u` (ms) with the
 * stable domain as tie-break. It is recognised by them and served until `bizdir reindex`.
 */
export const V2_SORTABLE = ['n', 'u', 'd'] as const;

const equalityOnly = { facetSearch: false, filter: { equality: true, comparison: false } } as const;

/** What the index needs to be searched and synced; the sort and filter structures come after a bulk load. */
export const ORG_INDEX_LOAD_SETTINGS: Settings = {
  searchableAttributes: ['g'],
  // `n` and `u` are the keys of the name and `updated` orders (`d` the API computes from the id):
  // org-search.ts reads them to merge a term's true suspects into a page.
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
  // Meilisearch skips detecting one per document: in the 1M lab, 33-58 % less anonymous memory
  // while loading documents, for the same time; at 5.7M one pair showed no difference
  // (docs/search.md, "Where a 5.7M build's time goes").
  localizedAttributes: [{ attributePatterns: ['g'], locales: ['eng'] }],
};

/** The name key: "equals" and "starts with" for sort=relevance (every format since 2). */
const NAME_KEY_FILTER = {
  attributePatterns: ['n'],
  features: { facetSearch: false, filter: { equality: true, comparison: true } },
};

export const ORG_INDEX_SETTINGS: Settings = {
  ...ORG_INDEX_LOAD_SETTINGS,
  filterableAttributes: [
    // Orgs are named in filters by their stable domain `d` (already a sort key), not by `id`: a
    // unique value per Org costs the index 100-150 bytes per Org in each facet database it is in.
    { attributePatterns: ['l', 'd'], features: equalityOnly },
    NAME_KEY_FILTER,
  ],
  // `np` and `db` are coarse buckets of `n` and `d`, and `n1` and `d1` (their first character)
  // coarser ones, sorted on first: Meilisearch then skips whole buckets before a deep page instead
  // of walking every value (org-document.ts). `updated` is `u` (ms), then `ua` (or `ud`
  // descending), then `d`: the groups of Orgs one import transaction wrote with the same `updated`
  // are skipped whole, and the one a page starts in is split 1,296 ways by the fraction of `ua`
  // (the stable domain's bucket) before `d` is walked.
  sortableAttributes: ['n', 'd', 'n1', 'np', 'u', 'ua', 'ud', 'd1', 'db'],
};

/**
 * The settings an index of format 2, 3, 4, 5 or 6 was built with (2-4 filtered Orgs by `id`; each its
 * own sort keys). Such an index keeps serving until `bizdir reindex`; tests build one to check the
 * upgrade.
 */
export function legacySettings(format: 2 | 3 | 4 | 5 | 6): Settings {
  if (format === 6) return { ...ORG_INDEX_SETTINGS, sortableAttributes: [...V6_SORTABLE] };
  if (format === 5) return { ...ORG_INDEX_SETTINGS, sortableAttributes: [...V5_SORTABLE] };
  const sortable = format === 2 ? V2_SORTABLE : format === 3 ? V3_SORTABLE : V4_SORTABLE;
  // Those releases left the words' language to Meilisearch's detection.
  const { localizedAttributes: _none, ...current } = ORG_INDEX_SETTINGS;
  return {
    ...current,
    filterableAttributes: [{ attributePatterns: ['l', 'id'], features: equalityOnly }, NAME_KEY_FILTER],
    sortableAttributes: [...sortable],
  };
}

/** A filter true of every document of this format and refused by an index of the old one. */
export const FORMAT_PROBE = 'NOT l = "-"';

/** Meilisearch experimental features the queries rely on (the v1 format's `STARTS WITH`). */
export const REQUIRED_FEATURES = { containsFilter: true } as const;
