import type { Transaction } from 'kysely';
import type { Database } from '../../shared/tables.js';
import { findLocationStates, keyOf, type LocationState, type Pending, refOf } from './locations.match.js';
import type { OrgRef } from './locations.normalize.js';
import type { OrgResolver } from './locations.orgs.js';

/**
 * Adopting by-name Locations: a sheet once imported without naming its Org (so its Locations went
 * to an Org found by business name) now names it. See findAdoptions.
 */

type Trx = Transaction<Database>;

/**
 * The rows that may have a by-name Location apart: their Org was named (by domain, company number
 * or `--org`), not found by its business name, they have a business name and a country (a partial
 * sheet may lack them), and no Location has their key yet.
 */
export function homelessNamed(
  candidates: readonly Pending[],
  states: readonly LocationState[],
  hasFallback: boolean,
): Pending[] {
  const known = new Set(states.map((e) => keyOf(e.org_id, e.code)));
  const named = (ref: OrgRef) =>
    ref.orgDomain !== undefined || ref.companyNumber !== undefined || hasFallback;
  return candidates.filter((p) => {
    const ref = refOf(p.record);
    return !known.has(p.key) && named(ref) && ref.businessName !== '' && ref.country !== '';
  });
}

/** What adopting decided: the moves, each moved Location's Org left, and their states before the move. */
export interface Adoptions {
  moves: { id: number; orgId: number }[];
  moved: Map<number, number>;
  left: LocationState[];
}

/** Of the by-name Locations found, the open ones that move, each to the Org its row names (first wins). */
export function movesOf(old: readonly LocationState[], target: ReadonlyMap<string, number>): Adoptions {
  const moved = new Map<number, number>();
  const moves: { id: number; orgId: number }[] = [];
  const left: LocationState[] = [];
  for (const e of old) {
    const to = target.get(keyOf(e.org_id, e.code));
    if (to === undefined || e.closed_date !== null || moved.has(e.id)) continue;
    moves.push({ id: e.id, orgId: to });
    moved.set(e.id, e.org_id);
    left.push(e);
  }
  return { moves, moved, left };
}

/**
 * A row that names its Org by domain, company number or `--org`, for a store code that Org does
 * not have yet, while the non-registered Org of the row's business name has an open Location with
 * that code: the sheet used to be imported without naming its Org. That Location moves to the
 * named Org (keeping its id and stable domain) instead of a second one being created. Returns the
 * Locations to move, each with the Org it leaves; the caller moves them (moveLocations).
 */
export async function findAdoptions(
  trx: Trx,
  resolver: OrgResolver,
  candidates: readonly Pending[],
  states: readonly LocationState[],
  hasFallback: boolean,
): Promise<Adoptions> {
  const homeless = homelessNamed(candidates, states, hasFallback);
  if (homeless.length === 0) return { moves: [], moved: new Map(), left: [] };
  const byName = await resolver.byNameOnly(
    trx,
    homeless.map((p) => refOf(p.record)),
  );
  const from = homeless.flatMap((p, i) => {
    const org = byName[i];
    return org && org.id !== p.org.id ? [{ p, orgId: org.id }] : [];
  });
  if (from.length === 0) return { moves: [], moved: new Map(), left: [] };
  const old = await findLocationStates(
    trx,
    from.map(({ p, orgId }) => ({ orgId, code: p.code })),
  );
  return movesOf(old, new Map(from.map(({ p, orgId }) => [keyOf(orgId, p.code), p.org.id])));
}
