import { rmSync } from 'node:fs';
import { Meilisearch } from 'meilisearch';
import { startMeiliServer } from '../bin/local/meili-server.js';
import { legacySettings } from '../search/index-definition.js';
import { foldName, planTerm } from '../search/name-text.js';
import { toV3OrgDocument, toV4OrgDocument } from '../search/org-document.js';
import { labRows, orgsArg } from './register/lab-rows.js';

/**
 * The sort buckets of index format 4, measured against format 3 (exact keys only) on the same
 * names, in one private Meilisearch:
 *
 *   node --import tsx bench/sort-buckets.ts [--orgs 300000]
 *
 * Builds both indexes from the generated register's names (bench/register), prints build time and
 * bytes per Org of each, then Meilisearch's own processingTimeMs (median of five) of the pages the
 * API asks for, at offsets 100, 2,000 and 9,900, for sparse and dense candidate sets and every sort,
 * and checks that both formats return the same ids. `updated` is one value per 5,000 Orgs, as an
 * import transaction writes it.
 */
const N = orgsArg(300_000);
const DIR = `/tmp/bizdir-sort-buckets-${process.pid}`;

const rows = await labRows(N);

rmSync(DIR, { recursive: true, force: true });
const server = await startMeiliServer({
  dataDir: DIR,
  masterKey: `sort-buckets-${process.pid}-key`,
  maxIndexingMemory: '1 GiB',
});
const meili = new Meilisearch({ host: server.url, apiKey: server.masterKey, timeout: 600_000 });
try {
  let before = 0;
  for (const [uid, format, toDoc] of [
    ['v3', 3, toV3OrgDocument],
    ['v4', 4, toV4OrgDocument],
  ] as const) {
    const t0 = Date.now();
    await meili.createIndex(uid, { primaryKey: 'id' }).waitTask();
    await meili.index(uid).updateSettings(legacySettings(format)).waitTask({ timeout: 600_000 });
    for (let i = 0; i < rows.length; i += 20_000)
      await meili
        .index(uid)
        .addDocuments(rows.slice(i, i + 20_000).map((r) => toDoc(r)))
        .waitTask({ timeout: 3_600_000, interval: 200 });
    const stats = await meili.getStats();
    console.log(
      `${uid}: built ${N} Orgs in ${((Date.now() - t0) / 1000).toFixed(1)} s, used ${Math.round((stats.usedDatabaseSize - before) / N)} B/Org`,
    );
    before = stats.usedDatabaseSize;
  }
  const rules = {
    v3: {
      name: ['n:asc', 'd:asc'],
      '-name': ['n:desc', 'd:asc'],
      updated: ['t:asc'],
      '-updated': ['t:desc'],
      domain: ['d:asc'],
    },
    v4: {
      name: ['nb:asc', 'n:asc', 'd:asc'],
      '-name': ['nb:desc', 'n:desc', 'd:asc'],
      updated: ['tb:asc', 't:asc'],
      '-updated': ['tb:desc', 't:desc'],
      domain: ['db:asc', 'd:asc'],
    },
  } as const;
  const time = async (
    uid: 'v3' | 'v4',
    q: string,
    filter: string[],
    sort: readonly string[],
    offset: number,
  ) => {
    const ms: number[] = [];
    let ids = '';
    let total = 0;
    for (let k = 0; k < 5; k++) {
      const r = await meili
        .index(uid)
        .search(q, { filter, sort: [...sort], offset, limit: 20, attributesToRetrieve: ['id'] });
      ms.push(r.processingTimeMs);
      ids = r.hits.map((h) => h.id).join(',');
      total = r.estimatedTotalHits ?? 0;
    }
    ms.sort((a, b) => a - b);
    return { ms: ms[2]!, ids, total };
  };
  console.log(
    '| query | sort | offset | matches | format 3 ms | format 4 ms | same ids |\n|---|---|---|---|---|---|---|',
  );
  const cases: { label: string; q: string; filter: string[] }[] = [
    ...['ho', 'j', 'sh', 'limited'].map((term) => {
      const plan = planTerm(foldName(term));
      return {
        label: term,
        q: plan.kind === 'prefix' ? plan.prefix : `"${plan.words.join(' ')}"`,
        filter: ['NOT l = "-"'],
      };
    }),
    ...['m', 'gr'].map((p) => ({
      label: `starts with ${p}`,
      q: '',
      filter: [`n >= "${p}" AND n < "${p}{"`],
    })),
  ];
  for (const c of cases)
    for (const sort of c.label.startsWith('starts')
      ? (['domain'] as const)
      : (['name', '-name', 'updated', '-updated', 'domain'] as const))
      for (const offset of [100, 2_000, 9_900]) {
        const a = await time('v3', c.q, c.filter, rules.v3[sort], offset);
        const b = await time('v4', c.q, c.filter, rules.v4[sort], offset);
        console.log(
          `| ${c.label} | ${sort} | ${offset} | ${a.total} | ${a.ms} | ${b.ms} | ${a.ids === b.ids ? 'yes' : 'NO'} |`,
        );
      }
} finally {
  await server.stop();
  rmSync(DIR, { recursive: true, force: true });
}
