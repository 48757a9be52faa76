import type { Settings } from 'meilisearch';

/**
 * The Org index, declared once: applied at start-up (ensureOrgIndex) and to every index a
 * reindex builds, so the live index and a rebuilt one can never differ in settings.
 *
 * Search never uses Meilisearch's word matching: every query is a filter over the encoded name
 * suffixes (see org-document.ts) plus a sort, so typo tolerance, searchable words and relevancy
 * rules are switched off or reduced to what the filters need. `maxTotalHits` is above any
 * register size so `estimatedTotalHits` of a filter-only (placeholder) search is the exact count.
 */
export const ORG_INDEX_PRIMARY_KEY = 'id';

export const ORG_INDEX_SETTINGS: Settings = {
  // Nothing is word-searched; an empty list would mean "all attributes", so name one small field.
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

/** Meilisearch experimental features the queries rely on (`STARTS WITH` needs containsFilter). */
export const REQUIRED_FEATURES = { containsFilter: true } as const;
