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

/** The en-US template of the location sheet (FEEDS.md) and two of its rows, as a sheet program exports them. */
const LOCATION_HEADER =
  'Store code,Business name,Address line 1,Address line 2,Address line 3,Address line 4,Address line 5,Sub-locality,Locality,Administrative area,Country / Region,Postal code,Latitude,Longitude,Primary phone,Additional phones,Website,Primary category,Additional categories,Sunday hours,Monday hours,Tuesday hours,Wednesday hours,Thursday hours,Friday hours,Saturday hours,Special hours,From the business,Opening date,Logo photo,Cover photo,Other photos,Labels,AdWords location extensions phone';
const locationRow = (code: string, name: string, description = '') =>
  `${code},${name},14 Harbour Row,,,,,Old Town,Whitby,,GB,YO21 3PU,54.4858,-0.6149,+44 1947 600123,,https://quayside.example.co.uk/whitby,Hardware store,,x,08:30-17:30,08:30-17:30,08:30-17:30,08:30-17:30,08:30-17:30,09:00-16:00,,"${description.replaceAll('"', '""')}",1962-05,,,,,`;
/** Text as Excel's "CSV" (Windows-1252) saves it: é is the byte E9, ’ the byte 92. */
const cp1252 = (text: string) => Buffer.from(text.replaceAll('\u2019', '\u0092'), 'latin1');
const utf8 = (text: string) => Buffer.from(text, 'utf8');

async function readChunked(bytes: Buffer, chunk: number, options: { maxRecordChars?: number } = {}) {
  const csv = await openCsv(streamOf(bytes, chunk), { batchSize: 3, ...options });
  const records: CsvRecord[] = [];
  for await (const b of csv.batches) records.push(...b);
  return records;
}

describe('CSV reading of text that is not UTF-8', () => {
  const NOT_UTF8 = /^not valid UTF-8 text \(the file may be Windows-1252 or Latin-1: save it as UTF-8\)$/;

  const QH3 = locationRow('QH-003', 'Quayside Hardware', 'Our newest shop.\r\nAsk for Dave\u2019s "rope"');

  it('rejects each data row that is not valid UTF-8 with its line, keeps real U+FFFD characters, at any chunk size', async () => {
    const bytes = Buffer.concat([
      utf8(`${LOCATION_HEADER}\r\n`),
      cp1252(`${locationRow('QH-001', 'Caf\u00e9 Quayside Hardware')}\r\n`),
      // Valid UTF-8 that holds U+FFFD itself (a sign maker's odd glyph, copied as it was): kept.
      utf8(`${locationRow('QH-002', 'Caf\u00e9 Quayside Hardware', 'Sign reads \uFFFD here')}\r\n`),
      // A quoted line break: the bad byte on the record's second line rejects the record, at its first line.
      utf8(`${QH3.split('\r\n')[0]}\r\n`),
      cp1252(`${QH3.split('\r\n')[1]}\r\n`),
      utf8(`${locationRow('QH-004', 'Quayside Hardware \u2019n\u2019 Paint')}\r\n`),
      cp1252(`${locationRow('QH-005', 'Quayside Caf\u00e9')}`),
    ]);
    const whole = await readChunked(bytes, 1 << 20);
    expect(whole.map((r) => [r.line, r.raw.slice(0, 6), r.error ?? null])).toEqual([
      [2, 'QH-001', expect.stringMatching(NOT_UTF8)],
      [3, 'QH-002', null],
      [4, 'QH-003', expect.stringMatching(NOT_UTF8)],
      [6, 'QH-004', null],
      [7, 'QH-005', expect.stringMatching(NOT_UTF8)],
    ]);
    // The rejected row keeps its text (the undecodable byte shown as U+FFFD) for the rejects list.
    expect(whole[0]!.raw).toMatch(/^QH-001,Caf\uFFFD Quayside Hardware,14 Harbour Row,/);
    expect(whole[1]!.fields[1]).toBe('Caf\u00e9 Quayside Hardware');
    expect(whole[1]!.fields[27]).toBe('Sign reads \uFFFD here');
    expect(whole[3]!.fields[1]).toBe('Quayside Hardware \u2019n\u2019 Paint');
    for (const chunk of [1, 2, 3, 7, 64, 1000]) expect(await readChunked(bytes, chunk)).toEqual(whole);
  });

  it('rejects a last row that ends inside a character, and reads characters cut by chunk edges whole', async () => {
    const good = utf8(`${LOCATION_HEADER}\n${locationRow('QH-001', 'Caf\u00e9 \u2019Quayside\u2019')}\n`);
    // The file stops after the first byte of "é" in the last cell.
    const lastRow = utf8(`${locationRow('QH-002', 'Quayside Hardware')}\u00e9`);
    const truncated = Buffer.concat([good, lastRow.subarray(0, -1)]);
    for (const chunk of [1, 3, 5, 1 << 20]) {
      const records = await readChunked(truncated, chunk);
      expect(records.map((r) => [r.line, r.error ?? null])).toEqual([
        [2, null],
        [3, expect.stringMatching(NOT_UTF8)],
      ]);
      expect(records[0]!.fields[1]).toBe('Caf\u00e9 \u2019Quayside\u2019');
      const whole = await readChunked(Buffer.concat([good, lastRow]), chunk);
      expect(whole.map((r) => r.error ?? null)).toEqual([null, null]);
      expect(whole[1]!.fields[33]).toBe('\u00e9');
    }
  });

  it('refuses a header line that is not valid UTF-8, and still calls binary data not CSV', async () => {
    const header = cp1252(`${LOCATION_HEADER},T\u00e9l\u00e9phone\n${locationRow('QH-001', 'Quayside')},\n`);
    await expect(openCsv(streamOf(header))).rejects.toThrow(
      'the header line is not valid UTF-8 text (the file may be Windows-1252 or Latin-1: save it as UTF-8)',
    );
    const image = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x01, 0xa4, 0xb1, 0x0a]);
    await expect(openCsv(streamOf(image))).rejects.toThrow('the file is not CSV text');
  });
});

describe('CSV reading of old-Mac line ends', () => {
  const CR_ONLY = 'lines end in CR only (old Mac format): save the file with LF or CRLF line endings';

  it('fails a file whose lines end in CR only, whether it is shorter or longer than the record limit', async () => {
    const rows = Array.from({ length: 40 }, (_, i) => locationRow(`QH-${i}`, 'Quayside Hardware'));
    const small = [LOCATION_HEADER, ...rows].join('\r');
    await expect(openCsv(streamOf(small, 64))).rejects.toThrow(CR_ONLY);
    await expect(openCsv(streamOf(`${small}\r`, 64))).rejects.toThrow(CR_ONLY);
    await expect(openCsv(streamOf(small, 64), { maxRecordChars: 1000 })).rejects.toThrow(CR_ONLY);
    // CRLF is read as before, and a CR inside a quoted cell is text.
    const crlf = [LOCATION_HEADER, locationRow('QH-1', 'Quayside', 'one\rtwo')].join('\r\n');
    expect((await readChunked(utf8(crlf), 7)).map((r) => [r.line, r.fields[27]])).toEqual([[2, 'one\rtwo']]);
  });
});

describe('CSV reading after a record longer than the limit', () => {
  it('rejects a stray-quote line longer than the record limit once, and later rows keep their line numbers', async () => {
    const rows = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => locationRow(`QH-${from + i}`, 'Quayside Hardware'));
    // Line 4 opens a quote it never closes and runs past the limit before its line break arrives.
    const read = async (longLine: number, chunk: number, maxRecordChars?: number) => {
      const text = [
        LOCATION_HEADER,
        ...rows(1, 2),
        `QH-BAD,"Quayside ${'Hardware '.repeat(longLine / 9)}`,
        ...rows(3, 30),
        '',
      ].join('\n');
      const records = await readChunked(utf8(text), chunk, maxRecordChars ? { maxRecordChars } : {});
      return records.map((r) => [r.line, r.raw.slice(0, 6), r.error ?? null]);
    };
    const expected = [
      [2, 'QH-1,Q', null],
      [3, 'QH-2,Q', null],
      [4, 'QH-BAD', 'unbalanced quotes (record too long)'],
      ...Array.from({ length: 30 }, (_, i) => [5 + i, `QH-${3 + i},Quayside`.slice(0, 6), null]),
    ];
    expect(await read(3_000, 64, 1_000)).toEqual(expected);
    expect(await read(3_000, 1, 1_000)).toEqual(expected);
    // As an import reads it: 64 KiB chunks, the 1 MiB default limit, a 1.5 MB line.
    expect(await read(1_500_000, 64 * 1024)).toEqual(expected);
  });
});
