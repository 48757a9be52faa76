import type { Settings } from 'meilisearch';

/**
 * Settings of the first index format (every name suffix as a filter value). An installation
 * upgraded from it keeps serving and syncing its old index until `bizdir reindex` builds the
 * current format and swaps it in; nothing creates this format any more.
 */
export const V1_INDEX_SETTINGS: Settings = {
  searchableAttributes: ['d'],
  displayedAttributes: ['id', 'd', 'v', 'n'],
  filterableAttributes: [
    {
      attributePatterns: ['p', 'w', 'c', 'b_*'],
      features: { facetSearch: false, filter: { equality: true, comparison: false } },
    },
    {
      attributePatterns: ['id'],
      features: { facetSearch: false, filter: { equality: true, comparison: false } },
    },
  ],
  sortableAttributes: ['n', 'u', 'd'],
  rankingRules: ['sort'],
  typoTolerance: { enabled: false },
  pagination: { maxTotalHits: 100_000_000 },
  faceting: { maxValuesPerFacet: 1 },
  stopWords: [],
  synonyms: {},
};

/** The one searchable attribute that tells a v1 index apart. */
export const V1_SEARCHABLE = 'd';
