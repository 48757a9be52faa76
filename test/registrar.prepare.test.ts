import { availableParallelism } from 'node:os';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { openCsv, splitFields } from '../ingest/csv.js';
import {
  prepareRegistrarBatch,
  registrarNormalizer,
  stageLineOf,
} from '../ingest/registrar/registrar.prepare.js';
import { batchesSentPerThread, prepareOffThread } from '../ingest/registrar/registrar.threads.js';
import { registrarCsv, registrarFields } from './support/registrar-csv.js';

const TODAY = Date.UTC(2026, 10, 22);

/** Rows of every kind a batch meets: plain, warnings, rejects, quotes and line breaks, bad CSV. */
function sampleCsv(): string {
  const rows: (ReturnType<typeof registrarFields> | string)[] = [];
  for (let i = 0; i < 300; i++) {
    const number = String(10_000 + i).padStart(8, '0');
    if (i % 50 === 7) rows.push(registrarFields('', `NO NUMBER ${i} LTD`));
    else if (i % 50 === 11)
      rows.push(registrarFields(number, `BAD DATE ${i} LTD`, { IncorporationDate: '31/02/2019' }));
    else if (i % 50 === 13) rows.push(registrarFields(number, `"QUOTED" ${i}\tTAB\\SLASH LTD`));
    else if (i % 50 === 17) rows.push(registrarFields(number, `LINE\nBREAK ${i} LTD`));
    else if (i % 50 === 19) rows.push('too,few,fields');
    else rows.push(registrarFields(number, `COMPANY ${i} ÉTOILE & SONS LTD`));
  }
  // An unclosed quote runs to the end of the file: last.
  rows.push('"unclosed, quote');
  return registrarCsv(rows);
}

async function records() {
  const csv = await openCsv(Readable.from([sampleCsv()]), { batchSize: 1000, deferFields: true });
  const all = [];
  for await (const batch of csv.batches) all.push(...batch);
  return { header: csv.header, headerRaw: csv.headerRaw, records: all };
}

describe('registrar batches prepared off the main thread', () => {
  it('give the rows, staging lines and issues of normalizing row by row', async () => {
    const { header, headerRaw, records: recs } = await records();
    const setup = { header, headerRaw, country: 'GB', today: TODAY, partNo: 3 };
    // The row-by-row path of ingest/run/prepare-batch.ts (normalizeBatch with the feed's normalize), written out
    // as stageRows writes a normalized record.
    const normalize = registrarNormalizer(setup);
    const expectedLines: string[] = [];
    const expectedIssues: unknown[] = [];
    for (const rec of splitFields(recs)) {
      if (rec.error) {
        expectedIssues.push({
          severity: 'rejected',
          line: rec.line,
          column: null,
          reason: rec.error,
          raw: rec.raw,
        });
        continue;
      }
      if (rec.fields.length !== header.length) {
        expectedIssues.push({
          severity: 'rejected',
          line: rec.line,
          column: null,
          reason: `wrong column count: expected ${header.length} fields, found ${rec.fields.length}`,
          raw: rec.raw,
        });
        continue;
      }
      const result = normalize(rec.fields, rec.raw);
      for (const w of result.warnings)
        expectedIssues.push({
          severity: 'warning',
          line: rec.line,
          column: w.column,
          reason: w.reason,
          raw: rec.raw,
        });
      if (result.ok) expectedLines.push(stageLineOf(3, rec.line, result.record));
      else
        expectedIssues.push({
          severity: 'rejected',
          line: rec.line,
          column: result.reject.column,
          reason: result.reject.reason,
          raw: rec.raw,
        });
    }
    expect(expectedLines.length).toBeGreaterThan(250);
    expect(expectedIssues.length).toBeGreaterThan(10);

    const inline = prepareRegistrarBatch(setup, recs);
    const threaded = await prepareOffThread(setup, recs);
    for (const batch of [inline, threaded]) {
      expect(batch.rows.map((r) => r.record.stageLine)).toEqual(expectedLines);
      expect(batch.issues).toEqual(expectedIssues);
    }
    // Several batches at once (read ahead, or two parts read by one process) are spread over the
    // threads and come back to their own callers.
    const quarters = [0, 1, 2, 3].map((q) => recs.slice((q * recs.length) / 4, ((q + 1) * recs.length) / 4));
    const sentBefore = batchesSentPerThread();
    const all = await Promise.all(quarters.map((h) => prepareOffThread(setup, h)));
    const sent = batchesSentPerThread().map((n, i) => n - (sentBefore[i] ?? 0));
    expect(all.flatMap((b) => b.rows.map((r) => r.record.stageLine))).toEqual(expectedLines);
    expect(all.flatMap((b) => b.issues)).toEqual(expectedIssues);
    // Each batch went to the thread holding the fewest: two threads (where there are two cores) took two each.
    expect(sent).toEqual(availableParallelism() >= 2 ? [2, 2] : [4]);
  });
});
