/**
 * Word lists and a seeded PRNG for the register generator (bench/register/names.ts): the shapes of the UK register
 * (surname or place + trade words + legal suffix, initials, numbered holding companies, `&`,
 * apostrophes, brackets, a few accented names).
 */

export const SURNAMES =
  'smith jones taylor brown williams wilson johnson davies robinson wright thompson evans walker white roberts green hall wood jackson clarke patel khan lewis james phillips mason mitchell rose davis rodriguez cox alexander morgan moore harris martin cooper ward turner hill kelly baker king lee carter scott morris price bennett gray bell shaw bailey hughes murphy parker young allen watson chapman fisher reid campbell ellis russell marshall webb simpson hunt palmer stewart hunter mills holmes knight butler lloyd barnes barker fox griffiths ryan harvey dixon burton graham pearce owen grant wells kennedy ahmed singh ali begum hussain'.split(
    ' ',
  );
export const PLACES =
  'london manchester bristol leeds york oxford cambridge kent essex surrey devon cornwall thames pennine chiltern cotswold highland lothian clyde tyne mersey avon severn humber solent wessex mercia northumbria cumbria anglia brighton bath chester durham lincoln norwich exeter preston derby leicester nottingham sheffield belfast cardiff swansea glasgow edinburgh aberdeen dundee'.split(
    ' ',
  );
export const WORDS =
  'acme apex alpha beta delta omega summit pinnacle horizon vertex nova stellar crown royal premier prime golden silver blue green red oak cedar maple willow elm birch harbour bridge castle tower garden meadow river valley forest ocean coastal urban metro global united national first united phoenix falcon eagle lion tiger fox badger swift'.split(
    ' ',
  );
export const TRADES =
  'widgets engineering consulting construction builders property properties holdings investments solutions services logistics transport haulage catering foods bakery butchers plumbing heating electrical roofing joinery carpentry cleaning security recruitment marketing media design digital software systems technologies tech data analytics finance capital ventures partners management developments estates lettings care homecare healthcare dental pharmacy vets motors garage autos trading imports exports textiles fashion beauty salon barbers fitness leisure events travel hospitality hotels restaurants cafe coffee brewing wines spirits farms agriculture landscaping gardens energy solar renewables environmental recycling waste printing publishing studios productions music films photography education training tutoring childcare nursery'.split(
    ' ',
  );
export const SUFFIXES = [
  'LTD',
  'LIMITED',
  'LIMITED',
  'LTD',
  'LTD',
  'PLC',
  'LLP',
  'CIC',
  '(UK) LTD',
  'GROUP LIMITED',
];
export const ACCENTED = [
  'CAFÉ',
  'CRÈME',
  'BRÛLÉE',
  'NAÏVE',
  'WIDGÉTRY',
  'ZOË',
  'JOSÉ',
  'MÜLLER',
  'FRANÇOIS',
  'SØRENSEN',
];

/** Deterministic PRNG (mulberry32) so every run generates the same register. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
