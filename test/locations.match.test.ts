import { describe, expect, it } from 'vitest';
import { homelessNamed, movesOf } from '../ingest/locations/locations.adopt.js';
import { firstRowPerOrg } from '../ingest/locations/locations.close.js';
import { matchLocationHeaders } from '../ingest/locations/locations.headers.js';
import {
  BatchIssues,
  candidatesFrom,
  type ExistingLocation,
  isSettled,
  keyOf,
  type Loaded,
  type LocationRecord,
  type LocationState,
  lastRowWins,
  type Pending,
  splitSettled,
} from '../ingest/locations/locations.match.js';
import { normalizeLocationRow } from '../ingest/locations/locations.normalize.js';
import type { OrgInfo } from '../ingest/locations/locations.orgs.js';
import {
  changeOf,
  isOwnSlug,
  mergeAhead,
  mergeRow,
  planWrites,
} from '../ingest/locations/locations.write.js';

/**
 * The loader's decisions, without a server: which rows match a stored Location, which are settled
 * by their fingerprint, which row wins a repeated key, what is new, changed or unchanged, which
 * by-name Locations move, and each Org's first row of a `--full` sheet.
 */

const ACME: OrgInfo = { id: 7, name: 'Acme Ltd', informal_name: 'Acme', domain_cc: 'gb' };
const COLUMNS = matchLocationHeaders([
  'Store code',
  'Business name',
  'Address line 1',
  'Locality',
  'Country / Region',
  'Org domain',
]);

function loaded(
  code: string,
  line: number,
  opts: { city?: string; domain?: string; fp?: string | null } = {},
) {
  const result = normalizeLocationRow(
    [code, 'Acme', `${line} High Street`, opts.city ?? 'Leeds', 'GB', opts.domain ?? ''],
    COLUMNS,
  );
  if (!result.ok) throw new Error(result.issue.reason);
  const record: Extract<LocationRecord, { kind: 'row' }> = {
    kind: 'row',
    row: result.row,
    fingerprint: opts.fp === undefined ? `fp-${code}-${line}` : opts.fp,
    merged: null,
  };
  return { line, raw: `row ${line}`, org: ACME, key: keyOf(ACME.id, code), code, record } satisfies Loaded;
}

function state(id: number, code: string, over: Partial<LocationState> = {}): LocationState {
  return {
    id,
    org_id: ACME.id,
    code,
    source_fingerprint: null,
    closed_date: null,
    last_run_id: null,
    version_number: 1,
    ...over,
  };
}

/** A stored Location exactly as the row `p` would write it. */
function storedAs(p: Loaded, id: number, over: Partial<ExistingLocation> = {}): ExistingLocation {
  const m = mergeRow(p.record.row, undefined);
  return {
    ...state(id, p.code),
    domain_cc: 'gb',
    content_hash: m.hash,
    public_slug: 'acme-leeds',
    address_id: 100 + id,
    address_hash: m.addrHash,
    stored: {},
    storedAddress: {},
    ...over,
  };
}

describe('isSettled', () => {
  const p = loaded('A1', 2);
  it('settles an open Location written from the same row text', () => {
    expect(isSettled(p, state(1, 'A1', { source_fingerprint: p.record.fingerprint }), new Map())).toBe(true);
  });
  it('does not settle a new key, another fingerprint, a closed or a moved Location', () => {
    const same = { source_fingerprint: p.record.fingerprint };
    expect(isSettled(p, undefined, new Map())).toBe(false);
    expect(isSettled(p, state(1, 'A1', { source_fingerprint: 'other' }), new Map())).toBe(false);
    expect(isSettled(p, state(1, 'A1', { ...same, closed_date: '2026-01-01' }), new Map())).toBe(false);
    expect(isSettled(p, state(1, 'A1', same), new Map([[1, 3]]))).toBe(false);
  });
});

describe('lastRowWins', () => {
  it('keeps the later row of a repeated key and counts the others', () => {
    const rows = [loaded('A1', 2), loaded('B1', 3), loaded('A1', 4), loaded('A1', 5)];
    const { unique, duplicates } = lastRowWins(rows);
    expect(unique.map((p) => p.line)).toEqual([3, 5]);
    expect(duplicates).toBe(2);
  });
});

describe('splitSettled', () => {
  it('counts settled rows unchanged, sends the rest to merge, and marks repeats of earlier batches', () => {
    const a = loaded('A1', 2);
    const b = loaded('B1', 3);
    const c = loaded('C1', 4);
    const noPrint = loaded('D1', 5, { fp: null });
    const settled = new Set<Pending>([a, c, noPrint]);
    const out = splitSettled([a, b, c, noPrint], new Set([c.key]), (p) => settled.has(p));
    expect(out.toMerge).toEqual([b, noPrint]); // a row without a fingerprint is never settled
    expect(out.unchanged).toBe(1); // c is a repeat: counted as a duplicate, not unchanged
    expect(out.duplicates).toBe(1);
    expect([...out.repeats]).toEqual([c]);
  });
});

describe('candidatesFrom', () => {
  it('sorts rows into candidates, refused keys and issues', () => {
    const good = loaded('A1', 2);
    const refused: LocationRecord = {
      kind: 'refused',
      issue: { column: 'Monday hours', reason: 'bad hours' },
      code: 'R1',
      org: good.record.row.org,
    };
    const rows = [
      { line: 2, raw: 'a', record: good.record },
      { line: 3, raw: 'b', record: refused },
      { line: 4, raw: 'c', record: good.record },
      { line: 5, raw: 'd', record: good.record },
    ];
    const issues = new BatchIssues();
    const { candidates, refusedKeys } = candidatesFrom(
      rows,
      [good.record, refused, good.record, null],
      [
        { ok: true, org: ACME },
        { ok: true, org: ACME },
        { ok: false, field: 'orgDomain', reason: 'no such Org' },
        { ok: true, org: ACME },
      ],
      issues,
      (field) => `[${field}]`,
    );
    expect(candidates.map((c) => [c.line, c.key])).toEqual([[2, '7:A1']]);
    expect(refusedKeys).toEqual(['7:R1']);
    expect(issues.list.map((i) => [i.line, i.column, i.reason])).toEqual([
      [3, 'Monday hours', 'bad hours'],
      [4, '[orgDomain]', 'no such Org'],
    ]);
  });
});

describe('changeOf and planWrites', () => {
  it('inserts a new key, leaves an identical Location alone and updates a changed one', () => {
    const p = loaded('A1', 2);
    const m = mergeRow(p.record.row, undefined);
    expect(changeOf(m, undefined, new Map()).change).toBe('insert');
    expect(changeOf(m, storedAs(p, 1), new Map())).toEqual({ change: 'unchanged', addressChanged: false });
    expect(changeOf(m, storedAs(p, 1, { content_hash: 'x' }), new Map()).change).toBe('update');
    expect(changeOf(m, storedAs(p, 1, { address_hash: 'x' }), new Map())).toEqual({
      change: 'update',
      addressChanged: true,
    });
    expect(changeOf(m, storedAs(p, 1, { address_id: null }), new Map()).addressChanged).toBe(true);
    expect(changeOf(m, storedAs(p, 1, { closed_date: '2026-01-01' }), new Map()).change).toBe('update');
    expect(changeOf(m, storedAs(p, 1), new Map([[1, 3]])).change).toBe('update');
  });

  it('plans the writes of a batch: bumps once per run, stores a new fingerprint of an unchanged row', () => {
    const fresh = loaded('N1', 2);
    const same = loaded('S1', 3, { fp: 'new-print' });
    const moved = loaded('M1', 4, { city: 'York' });
    const again = loaded('W1', 5, { city: 'Hull' });
    const stored = new Map([
      [same.key, storedAs(same, 1, { source_fingerprint: 'old-print' })],
      [moved.key, storedAs(loaded('M1', 4), 2)],
      [again.key, storedAs(loaded('W1', 5), 3, { last_run_id: 9 })],
    ]);
    const plan = planWrites([fresh, same, moved, again], stored, new Map(), new Set(), 9, (p, e) =>
      mergeRow(p.record.row, e),
    );
    expect(plan.inserts.map((w) => [w.p.code, w.loc.bump, w.loc.domain_cc])).toEqual([['N1', true, 'gb']]);
    expect(plan.updates.map((u) => [u.p.code, u.loc.bump, u.addressChanged])).toEqual([
      ['M1', true, true],
      ['W1', false, true], // the run already wrote it (a repeated key): no second bump
    ]);
    expect(plan.updates[0]!.loc.id).toBe(2);
    expect(plan.refreshed).toEqual([{ id: 1, fingerprint: 'new-print' }]);
    expect(plan.unchanged).toBe(1);
  });
});

describe('rows merged ahead', () => {
  it('insert the same COPY text as rows merged in the batch, and merge again when they update', () => {
    const merge = (q: Loaded, e: ExistingLocation | undefined) => mergeRow(q.record.row, e);
    const ahead = (q: Loaded): Loaded => ({
      ...q,
      record: { ...q.record, merged: mergeAhead(q.record.row, q.record.fingerprint) },
    });
    const fresh = loaded('N1', 2, { city: 'York' });
    const [inBatch, merged] = [fresh, ahead(fresh)].map(
      (q) => planWrites([q], new Map(), new Map(), new Set(), 9, merge).inserts,
    );
    const written = (xs: typeof merged) => xs!.map(({ p: _p, ...x }) => x);
    expect(written(merged)).toEqual(written(inBatch));
    expect(merged![0]!.addr.copy).toContain('\tYork\t');

    const changed = loaded('S1', 3, { city: 'Hull' });
    const stored = new Map([[changed.key, storedAs(loaded('S1', 3), 1)]]);
    const [direct, again] = [changed, ahead(changed)].map(
      (q) => planWrites([q], stored, new Map(), new Set(), 9, merge).updates,
    );
    expect(again).toHaveLength(1);
    expect(again![0]!.loc).toEqual(direct![0]!.loc);
    expect(again![0]!.addr).toEqual(direct![0]!.addr);
  });
});

describe('public slugs', () => {
  it('keeps a slug while it is its base or a numbered copy of it', () => {
    expect(isOwnSlug('acme-leeds', 'acme-leeds')).toBe(true);
    expect(isOwnSlug('acme-leeds-2', 'acme-leeds')).toBe(true);
    expect(isOwnSlug('acme-leeds-north', 'acme-leeds')).toBe(false);
    expect(isOwnSlug('acme-york', 'acme-leeds')).toBe(false);
  });
});

describe('adoption of by-name Locations', () => {
  it('considers only rows that name their Org and whose key is not stored yet', () => {
    const named = loaded('A1', 2, { domain: 'acme.example' });
    const byName = loaded('B1', 3);
    const known = loaded('C1', 4, { domain: 'acme.example' });
    const states = [state(1, 'C1')];
    expect(homelessNamed([named, byName, known], states, false)).toEqual([named]);
    // With `--org` every row names its Org.
    expect(homelessNamed([named, byName, known], states, true)).toEqual([named, byName]);
  });

  it('moves each open by-name Location once, to the Org its row names', () => {
    const target = new Map([
      [keyOf(3, 'A1'), 7],
      [keyOf(3, 'B1'), 7],
    ]);
    const old = [
      { ...state(11, 'A1'), org_id: 3 },
      { ...state(12, 'B1'), org_id: 3, closed_date: '2026-01-01' },
      { ...state(13, 'Z1'), org_id: 3 },
    ];
    const { moves, moved } = movesOf(old, target);
    expect(moves).toEqual([{ id: 11, orgId: 7 }]);
    expect([...moved]).toEqual([[11, 3]]);
  });
});

describe('firstRowPerOrg', () => {
  it("keeps each Org's lowest line", () => {
    const rows = [
      { orgId: 1, code: 'b', line: 5 },
      { orgId: 2, code: 'x', line: 7 },
      { orgId: 1, code: 'a', line: 3 },
    ];
    expect(firstRowPerOrg(rows)).toEqual([
      { orgId: 1, code: 'a', line: 3 },
      { orgId: 2, code: 'x', line: 7 },
    ]);
  });
});
