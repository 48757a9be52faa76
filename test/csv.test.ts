import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type CsvRecord, openCsv, PARSE_CONFIG } from '../ingest/csv.js';
import { FeedFormatError } from '../shared/errors.js';
import { below, rng } from './support/rng.js';

/** Feeds text in small chunks so records and multi-byte characters straddle chunk edges. */
function streamOf(text: string | Buffer, chunk = 7): Readable {
  const buf = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const parts: Buffer[] = [];
  for (let i = 0; i < buf.length; i += chunk) parts.push(buf.subarray(i, i + chunk));
  return Readable.from(parts);
}

async function readAll(text: string | Buffer, batchSize = 2) {
  const csv = await openCsv(streamOf(text), { batchSize });
  const records: CsvRecord[] = [];
  const sizes: number[] = [];
  for await (const batch of csv.batches) {
    sizes.push(batch.length);
    records.push(...batch);
  }
  return { header: csv.header, records, sizes };
}

describe('CSV reading', () => {
  it('trims header names, keeps every value a string, and handles doubled quotes and commas', async () => {
    const { header, records } = await readAll(
      'CompanyName, CompanyNumber, Zip\n"ACME ""BEST"" WIDGETS, LTD","07687209","00123"\n',
    );
    expect(header).toEqual(['CompanyName', 'CompanyNumber', 'Zip']);
    expect(records).toEqual([
      {
        line: 2,
        raw: '"ACME ""BEST"" WIDGETS, LTD","07687209","00123"',
        fields: ['ACME "BEST" WIDGETS, LTD', '07687209', '00123'],
      },
    ]);
  });

  it.each([
    ['LF', '\n'],
    ['CRLF', '\r\n'],
  ])('reads %s files with quoted line breaks and gives physical line numbers', async (_name, eol) => {
    const text = ['a,b', '"1","x"', `"2","two${eol}lines"`, '', '"3","É’Ü"', ''].join(eol);
    const { records } = await readAll(text);
    expect(records.map((r) => [r.line, r.fields])).toEqual([
      [2, ['1', 'x']],
      [3, ['2', `two${eol}lines`]],
      [6, ['3', 'É’Ü']],
    ]);
    expect(records[0]!.raw).toBe('"1","x"');
  });

  it('delivers batches of the asked size and reads the last record without a final newline', async () => {
    const { records, sizes } = await readAll('h\n"1"\n"2"\n"3"\n"4"\n"5"', 2);
    expect(sizes).toEqual([2, 2, 1]);
    expect(records.map((r) => r.fields[0])).toEqual(['1', '2', '3', '4', '5']);
  });

  it('leaves a wrong column count for the caller to see, and strips a byte-order mark', async () => {
    const { header, records } = await readAll('\uFEFFa,b,c\n"1","2"\n"1","2","3","4"\n');
    expect(header).toEqual(['a', 'b', 'c']);
    expect(records.map((r) => r.fields.length)).toEqual([2, 4]);
  });

  it('marks a record with an unbalanced quote and goes on after it', async () => {
    const { records } = await readAll(`a,b\n"1","ok"\n"2","broken\n"3","ok"\n`);
    // Quote parity joins the broken line with the next one; papaparse then flags the result.
    expect(records[0]).toMatchObject({ line: 2, fields: ['1', 'ok'] });
    expect(records.length).toBeGreaterThanOrEqual(2);
    expect(records.slice(1).some((r) => r.error !== undefined || r.fields.length !== 2)).toBe(true);
  });

  it('resynchronises after a stray quote instead of swallowing the rest of the file', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => `"${i}","row"`);
    const text = ['a,b', '"bad,x', ...rows].join('\n');
    const csv = await openCsv(streamOf(text, 64), { batchSize: 100, maxRecordChars: 200 });
    const records: CsvRecord[] = [];
    for await (const b of csv.batches) records.push(...b);
    expect(records[0]).toMatchObject({ line: 2, error: expect.stringMatching(/unbalanced/) });
    expect(records.filter((r) => !r.error && r.fields[1] === 'row').length).toBeGreaterThan(40);
    expect(records.at(-1)).toMatchObject({ line: 52, fields: ['49', 'row'] });
  });

  it('refuses an empty file and a binary file', async () => {
    await expect(openCsv(streamOf(''))).rejects.toThrow(FeedFormatError);
    await expect(openCsv(streamOf(''))).rejects.toThrow(/empty/);
    const binary = Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x00, 0x00, 0xff, 0xfe, 0x0a, 0x01]);
    await expect(openCsv(streamOf(binary))).rejects.toThrow(/not CSV/);
  });

  it('reads only as far as the consumer asks (back-pressure)', async () => {
    let pulled = 0;
    const lines = ['h', ...Array.from({ length: 10_000 }, (_, i) => `"${i}"`)].join('\n');
    const buf = Buffer.from(lines);
    const source = Readable.from(
      (function* () {
        for (let i = 0; i < buf.length; i += 1024) {
          pulled += 1024;
          yield buf.subarray(i, i + 1024);
        }
      })(),
    );
    const csv = await openCsv(source, { batchSize: 10 });
    const first = await csv.batches.next();
    expect(first.value).toHaveLength(10);
    // Only a few chunks are read for one batch of ten short records, not the whole 60 KB.
    expect(pulled).toBeLessThan(buf.length / 2);
    await csv.batches.return(undefined);
  });
});

describe('CSV reading of large chunks', () => {
  it('gives the same records whether the text comes in one chunk or byte by byte', async () => {
    const rows = Array.from({ length: 30 }, (_, i) => `"${i}","two\r\nlines ""q""",x${i}`);
    const text = ['a,b,c', ...rows, '', '"bad"x,y,z', 'last,row,here'].join('\r\n');
    const read = async (chunk: number) => {
      const csv = await openCsv(streamOf(text, chunk), { batchSize: 7 });
      const records: CsvRecord[] = [];
      for await (const b of csv.batches) records.push(...b);
      return records;
    };
    const whole = await read(1 << 20);
    expect(whole).toEqual(await read(1));
    expect(whole).toHaveLength(32);
    expect(whole[1]).toEqual({
      line: 4,
      raw: '"1","two\r\nlines ""q""",x1',
      fields: ['1', 'two\r\nlines "q"', 'x1'],
    });
    // A record without a problem has no `error` key at all.
    expect(Object.keys(whole[1]!)).toEqual(['line', 'raw', 'fields']);
    expect(whole[30]).toMatchObject({ line: 63, error: expect.stringMatching(/malformed quoting/) });
    expect(whole[31]).toEqual({ line: 64, raw: 'last,row,here', fields: ['last', 'row', 'here'] });
  });

  it('cuts whole records (quoted line breaks, doubled quotes) alike at any chunk size, fields deferred or not', async () => {
    const text = ['a,b,c', '"1","x\ny",""""', '"4","5","6"', '"7",""",""",9', 'plain,row,here'].join('\n');
    const read = async (chunk: number, deferFields: boolean) => {
      const csv = await openCsv(streamOf(text, chunk), { batchSize: 2, deferFields });
      const records: CsvRecord[] = [];
      for await (const b of csv.batches) records.push(...b);
      return records.map(({ line, raw, error }) => ({ line, raw, error }));
    };
    const whole = await read(1 << 20, false);
    for (const chunk of [1, 3, 17, 64]) {
      expect(await read(chunk, false)).toEqual(whole);
      expect(await read(chunk, true)).toEqual(whole);
    }
    expect(whole).toEqual([
      { line: 2, raw: '"1","x\ny",""""', error: undefined },
      { line: 4, raw: '"4","5","6"', error: undefined },
      { line: 5, raw: '"7",""",""",9', error: undefined },
      { line: 6, raw: 'plain,row,here', error: undefined },
    ]);
  });

  it('marks a quoted record longer than maxRecordChars even when its quotes close (whole records are cut only up to that length)', async () => {
    const text = `a,b,c\n"${'L'.repeat(150)}",2,3\n"4","5","6"\n`;
    const csv = await openCsv(streamOf(text, 1 << 20), { batchSize: 5, maxRecordChars: 100 });
    const records: CsvRecord[] = [];
    for await (const b of csv.batches) records.push(...b);
    expect(records.map((r) => [r.line, r.error ?? null])).toEqual([
      [2, expect.stringMatching(/unbalanced quotes/)],
      [3, null],
    ]);
  });

  it('delivers the whole batches before an endless line, then fails', async () => {
    const text = `h\n1\n2\n3\n4\n5\n${'A'.repeat(300)}`;
    const csv = await openCsv(Readable.from([Buffer.from(text)]), { batchSize: 2, maxRecordChars: 100 });
    const sizes: number[] = [];
    await expect(
      (async () => {
        for await (const b of csv.batches) sizes.push(b.length);
      })(),
    ).rejects.toThrow(/line 7 is too long/);
    expect(sizes).toEqual([2, 2]);
  });
});

describe('CSV reading of non-text input', () => {
  it('stops at an endless line instead of buffering it', async () => {
    const endless = Readable.from(
      (function* () {
        for (let i = 0; i < 100; i++) yield Buffer.alloc(64 * 1024, 0x41);
      })(),
    );
    await expect(openCsv(endless, { maxRecordChars: 256 * 1024 })).rejects.toThrow(
      /line 1 is too long: not a CSV file/,
    );
  });
});

describe('CSV field splitting without papaparse (simpleFields)', () => {
  // A small deterministic generator (no dependency on Math.random's seed).
  const random = rng(12345);
  const rand = (n: number) => below(random, n);
  const ALPHABET = ['a', 'B', ' ', ',', '"', '\n', '\r', 'é', '\t', '\\', '""'];
  const text = () => Array.from({ length: rand(6) }, () => ALPHABET[rand(ALPHABET.length)]).join('');
  const field = () => {
    switch (rand(5)) {
      case 0:
        return text();
      case 1:
        return `"${text()}"`;
      case 2:
        return `"${text().replaceAll('"', '""')}"`;
      case 3:
        return `${rand(2) ? ' ' : ''}"${text().replaceAll('"', '')}"${rand(2) ? ' ' : ''}`;
      default:
        return text().replaceAll('"', '').replaceAll('\n', '');
    }
  };

  it('splits exactly as papaparse whenever it splits at all (30,000 random records), and takes the plain ones', async () => {
    const Papa = (await import('papaparse')).default;
    const { simpleFields } = await import('../ingest/csv.js');
    let taken = 0;
    for (let k = 0; k < 30_000; k++) {
      const raw = Array.from({ length: 1 + rand(6) }, field).join(',');
      const mine = simpleFields(raw);
      if (mine === null) continue;
      taken++;
      const papa = Papa.parse<string[]>(raw, PARSE_CONFIG);
      expect({ raw, fields: mine }).toEqual({ raw, fields: papa.data[0] });
      expect({ raw, rows: papa.data.length, errors: papa.errors }).toEqual({ raw, rows: 1, errors: [] });
    }
    // The generator is not all odd cases: a good share of records takes the direct path.
    expect(taken).toBeGreaterThan(3_000);
    expect(simpleFields('"ACME LTD","1, HIGH STREET","LONDON\nEC1"')).toEqual([
      'ACME LTD',
      '1, HIGH STREET',
      'LONDON\nEC1',
    ]);
    expect(simpleFields('a,,"",')).toEqual(['a', '', '', '']);
    for (const odd of ['', '"a""b"', '"a"b', 'a"b', '"a', ' "a"', '"a" ,b'])
      expect(simpleFields(odd)).toBeNull();
  });
});
