import { rmSync } from 'node:fs';
import { Meilisearch } from 'meilisearch';
import { startMeiliServer } from '../bin/local/meili-server.js';
import { ORG_INDEX_LOAD_SETTINGS, ORG_INDEX_SETTINGS } from '../search/index-definition.js';
import { foldName, planTerm } from '../search/name-text.js';
import { type OrgRowForIndex, toOrgDocument } from '../search/org-document.js';
import { labRows, orgsArg } from './register/lab-rows.js';

/**
 * Lab: where a deep sorted page's time goes inside Meilisearch, and whether coarser sort keys in
 * front of format 6's cut it. One index of the generated register's names holds
 * the shipped document plus candidate coarse keys, all sortable, so that every sort order is
 * timed on the same data:
 *
 *   node --import tsx bench/sort-levels.ts [--orgs 1000000]
 *
 * - `n1`, `n2`: the name key's first one and two characters; `d1`: the stable domain's first;
 * - `uc`: `updated` in blocks of 16 seconds (the lab writes one `updated` per 5,000 Orgs, one
 *   second apart, as import transactions do);
 * - `ua`, `ud` (in format 7's document): `updated` in ms with the stable domain's bucket `db` as
 *   a fraction (org-document.ts updatedThenBucket): one key for `updated` then `db`.
 *
 *   LAB_SORTS=updated,-updated   only these sorts
 *   LAB_WINDOWS=0x120,9700x220   offset x limit of each page timed (default 0x20,2000x20,9900x20)
 *
 * Prints Meilisearch's own processingTimeMs (median of five) for each order at offsets 0, 2,000
 * and 9,900, and whether every order of one sort returns the same ids (a coarse key is a prefix
 * of the exact one, so the order cannot change).
 */
const N = orgsArg(1_000_000);
const DIR = `/tmp/bizdir-sort-levels-${process.pid}`;

const rows = await labRows(N);
const doc = (row: OrgRowForIndex) => {
  const d = toOrgDocument(row);
  return {
    ...d,
    n1: d.n.slice(0, 1),
    n2: d.n.slice(0, 2),
    d1: d.d.slice(0, 1),
    uc: Math.floor(d.u / 16_000),
  };
};

const ORDERS: Record<string, Record<string, string[]>> = {
  name: {
    'format 6': ['np:asc', 'n:asc', 'd:asc'],
    'n1 first': ['n1:asc', 'np:asc', 'n:asc', 'd:asc'],
    'n2 first': ['n2:asc', 'np:asc', 'n:asc', 'd:asc'],
    'n1, n2 first': ['n1:asc', 'n2:asc', 'np:asc', 'n:asc', 'd:asc'],
    'no bucket': ['n:asc', 'd:asc'],
  },
  '-name': {
    'format 6': ['np:desc', 'n:desc', 'd:asc'],
    'n1 first': ['n1:desc', 'np:desc', 'n:desc', 'd:asc'],
    'n2 first': ['n2:desc', 'np:desc', 'n:desc', 'd:asc'],
    'n1, n2 first': ['n1:desc', 'n2:desc', 'np:desc', 'n:desc', 'd:asc'],
  },
  updated: {
    'format 6': ['u:asc', 'db:asc', 'd:asc'],
    'uc first': ['uc:asc', 'u:asc', 'db:asc', 'd:asc'],
    'd1 before db': ['u:asc', 'd1:asc', 'db:asc', 'd:asc'],
    'ua, d': ['ua:asc', 'd:asc'],
    'u, ua, d': ['u:asc', 'ua:asc', 'd:asc'],
  },
  '-updated': {
    'format 6': ['u:desc', 'db:asc', 'd:asc'],
    'uc first': ['uc:desc', 'u:desc', 'db:asc', 'd:asc'],
    'ud, d': ['ud:desc', 'd:asc'],
    'u, ud, d': ['u:desc', 'ud:desc', 'd:asc'],
  },
  domain: {
    'format 6': ['db:asc', 'd:asc'],
    'd1 first': ['d1:asc', 'db:asc', 'd:asc'],
  },
};

rmSync(DIR, { recursive: true, force: true });
const server = await startMeiliServer({
  dataDir: DIR,
  masterKey: `sort-levels-${process.pid}-key`,
  maxIndexingMemory: '2 GiB',
});
process.once('exit', () => rmSync(DIR, { recursive: true, force: true }));
const meili = new Meilisearch({ host: server.url, apiKey: server.masterKey, timeout: 600_000 });
const index = meili.index('orgs');
try {
  const t0 = Date.now();
  await meili.createIndex('orgs', { primaryKey: 'id' }).waitTask();
  await index.updateSettings(ORG_INDEX_LOAD_SETTINGS).waitTask({ timeout: 600_000 });
  for (let i = 0; i < rows.length; i += 20_000)
    await index
      .addDocuments(rows.slice(i, i + 20_000).map(doc))
      .waitTask({ timeout: 3_600_000, interval: 200 });
  await index
    .updateSettings({
      ...ORG_INDEX_SETTINGS,
      sortableAttributes: [...(ORG_INDEX_SETTINGS.sortableAttributes ?? []), 'n2', 'uc'],
    })
    .waitTask({ timeout: 3_600_000, interval: 200 });
  const stats = await meili.getStats();
  console.log(
    `built ${N} Orgs in ${((Date.now() - t0) / 1000).toFixed(1)} s, used ${Math.round(stats.usedDatabaseSize / N)} B/Org`,
  );

  const time = async (q: string, sort: readonly string[], offset: number, limit: number) => {
    const ms: number[] = [];
    let ids = '';
    let total = 0;
    for (let k = 0; k < 5; k++) {
      const r = await index.search(q, {
        filter: ['NOT l = "-"'],
        sort: [...sort],
        offset,
        limit,
        attributesToRetrieve: ['id'],
      });
      ms.push(r.processingTimeMs);
      ids = r.hits.map((h) => h.id).join(',');
      total = r.estimatedTotalHits ?? 0;
    }
    ms.sort((a, b) => a - b);
    return { ms: ms[2]!, ids, total };
  };
  const terms = (process.env.LAB_TERMS ?? 'ho,j,sh,limited,services,property,holdings,').split(',');
  const onlySorts = process.env.LAB_SORTS?.split(',');
  const windows = (process.env.LAB_WINDOWS ?? '0x20,2000x20,9900x20').split(',').map((w) => {
    const [offset, limit] = w.split('x').map(Number);
    if (!Number.isInteger(offset) || !Number.isInteger(limit))
      throw new Error(`LAB_WINDOWS: not offset x limit: ${w}`);
    return { offset: offset!, limit: limit! };
  });
  for (const [sort, orders] of Object.entries(ORDERS)) {
    if (onlySorts && !onlySorts.includes(sort)) continue;
    const labels = Object.keys(orders);
    console.log(`\n| ${sort} | offset x limit | matches | ${labels.join(' | ')} | same ids |`);
    console.log(`|---|---|---|${labels.map(() => '---|').join('')}---|`);
    for (const term of terms) {
      const plan = planTerm(foldName(term));
      const q = term === '' ? '' : plan.kind === 'prefix' ? plan.prefix : `"${plan.words.join(' ')}"`;
      for (const { offset, limit } of windows) {
        const results: { ms: number; ids: string; total: number }[] = [];
        for (const label of labels) results.push(await time(q, orders[label]!, offset, limit));
        const same = results.every((r) => r.ids === results[0]!.ids);
        console.log(
          `| ${term || '(every Org)'} | ${offset} x ${limit} | ${results[0]!.total} | ${results.map((r) => r.ms).join(' | ')} | ${same ? 'yes' : 'NO'} |`,
        );
      }
    }
  }
} finally {
  await server.stop();
  rmSync(DIR, { recursive: true, force: true });
}
