import { describe, expect, it } from 'vitest';
import {
  HoursCache,
  parseDayHours,
  parseSpecialHours,
  splitList,
} from '../ingest/locations/locations.hours.js';

const open = (open_time: string, close_time: string) => ({ day: 1, open: true, open_time, close_time });
const closed = { day: 1, open: false, open_time: '00:00', close_time: '00:00' };

describe('weekday hours cells', () => {
  const table: [string, unknown][] = [
    ['', null],
    ['   ', null],
    ['08:30-17:30', [open('08:30', '17:30')]],
    ['8:30-17:30', [open('08:30', '17:30')]],
    [' 09:00 - 17:00 ', [open('09:00', '17:00')]],
    ['09:00–17:00', [open('09:00', '17:00')]],
    ['x', [closed]],
    ['X', [closed]],
    [' x ', [closed]],
    ['09:00-12:00, 13:00-17:00', [open('09:00', '12:00'), open('13:00', '17:00')]],
    // split hours come out in time order whatever order the cell uses
    ['13:00-17:00,09:00-12:00', [open('09:00', '12:00'), open('13:00', '17:00')]],
    ['09:00-12:00; 13:00-17:00', [open('09:00', '12:00'), open('13:00', '17:00')]],
    ['00:00-24:00', [open('00:00', '24:00')]],
    ['00:00-00:00', [open('00:00', '24:00')]],
    ['12:00 AM-12:00 AM', [open('00:00', '24:00')]],
    ['18:00-02:00', [open('18:00', '02:00')]],
    ['18:00-00:00', [open('18:00', '00:00')]],
    ['18:00-24:00', [open('18:00', '24:00')]],
    ['10:00 AM-04:00 PM', [open('10:00', '16:00')]],
    ['06:00am-11:00pm', [open('06:00', '23:00')]],
    ['6am-11pm', [open('06:00', '23:00')]],
    ['12:30 PM-1:15 AM', [open('12:30', '01:15')]],
    ['8:00 a.m.-5:00 p.m.', [open('08:00', '17:00')]],
    ['11:00 AM - 2:00 PM, 5:00 PM - 10:00 PM', [open('11:00', '14:00'), open('17:00', '22:00')]],
    ['11:00-14:00, 18:00-01:00', [open('11:00', '14:00'), open('18:00', '01:00')]],
  ];
  it.each(table)('%j', (cell, expected) => {
    expect(parseDayHours(cell, 1)).toEqual({ ok: true, value: expected });
  });

  it('gives every entry the weekday it was read for', () => {
    expect(parseDayHours('x', 0)).toEqual({ ok: true, value: [{ ...closed, day: 0 }] });
    expect(parseDayHours('09:00-10:00', 6)).toEqual({
      ok: true,
      value: [{ ...open('09:00', '10:00'), day: 6 }],
    });
  });

  const refused: [string, RegExp][] = [
    ['closed', /not a range/],
    ['9-5', /not a time/],
    ['0900-1700', /not a time/],
    ['25:00-26:00', /not a time of day/],
    ['09:60-17:00', /not a time of day/],
    ['24:30-02:00', /not a time of day/],
    ['24:00-02:00', /opens at 24:00/],
    ['13:00 PM-14:00 PM', /not a 12-hour time/],
    ['09:00', /not a range/],
    ['09:00-17:00-18:00', /not a time/],
    ['09:00-', /not a range/],
    ['x, 09:00-12:00', /cannot be combined/],
    ['09:00-13:00, 12:00-17:00', /overlap/],
    ['18:00-02:00, 20:00-23:00', /overlap/],
    ['10:00 AM-16:00', /mixes 12-hour and 24-hour/],
    ['09:00-09:00', /same time/],
    ['open 24 hours', /not a/],
  ];
  it.each(refused)('refuses %j', (cell, reason) => {
    const result = parseDayHours(cell, 1);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(reason);
  });
});

describe('special hours cells', () => {
  const on = (date: string, open_time: string, close_time: string) => ({
    date,
    open: true,
    open_time,
    close_time,
  });
  const shut = (date: string) => ({ date, open: false, open_time: '00:00', close_time: '00:00' });

  const table: [string, unknown][] = [
    ['', null],
    ['2026-12-24: 09:00-14:00', [on('2026-12-24', '09:00', '14:00')]],
    ['2026-12-25: x', [shut('2026-12-25')]],
    ['2026-12-25: X', [shut('2026-12-25')]],
    [
      '2026-12-24: 08:30-13:00, 2026-12-25: x, 2026-12-26: x',
      [on('2026-12-24', '08:30', '13:00'), shut('2026-12-25'), shut('2026-12-26')],
    ],
    // a bare range after an entry is a second range on that entry's date
    [
      '2026-12-24: 09:00-12:00, 13:00-15:00, 2026-12-31: 10:00-16:00',
      [
        on('2026-12-24', '09:00', '12:00'),
        on('2026-12-24', '13:00', '15:00'),
        on('2026-12-31', '10:00', '16:00'),
      ],
    ],
    // by date, then time, whatever order the cell uses
    ['2027-01-01: x, 2026-12-31:10:00 AM-2:00 PM', [on('2026-12-31', '10:00', '14:00'), shut('2027-01-01')]],
    ['2026-12-31: 20:00-02:00', [on('2026-12-31', '20:00', '02:00')]],
    ['2026-12-31: 00:00-24:00', [on('2026-12-31', '00:00', '24:00')]],
    ['2028-02-29: x', [shut('2028-02-29')]],
  ];
  it.each(table)('%j', (cell, expected) => {
    expect(parseSpecialHours(cell)).toEqual({ ok: true, value: expected });
  });

  const refused: [string, RegExp][] = [
    ['2026-02-30: x', /2026-02-30 is not a real date/],
    ['2027-02-29: x', /not a real date/],
    ['2026-13-01: x', /not a real date/],
    ['2026-12-00: 09:00-12:00', /not a real date/],
    ['09:00-12:00', /not an entry/],
    ['24/12/2026: x', /not an entry/],
    ['2026-12-24 09:00-12:00', /not an entry/],
    ['2026-12-24: closed', /not a range/],
    ['2026-12-24:', /not a range/],
    ['2026-12-25: x, 10:00-12:00', /cannot be combined/],
    ['2026-12-24: 09:00-25:00', /not a time of day/],
  ];
  it.each(refused)('refuses %j', (cell, reason) => {
    const result = parseSpecialHours(cell);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(reason);
  });
});

describe('list cells', () => {
  it.each([
    ['', []],
    [' , ;; ', []],
    ['a', ['a']],
    [' a , b;c ;', ['a', 'b', 'c']],
    ['\u00a0x\u00a0,\ty\n', ['x', 'y']],
  ])('%j', (cell, parts) => {
    expect(splitList(cell)).toEqual(parts);
  });
});

describe('hours remembered per sheet', () => {
  it('gives the same results as parsing each cell, shared and frozen', () => {
    const cache = new HoursCache();
    for (const cell of ['09:00-12:00, 13:00-17:00', 'x', '', '9 till 5']) {
      for (const day of [0, 3]) {
        const first = cache.day(cell, day);
        expect(first).toEqual(parseDayHours(cell, day));
        expect(cache.day(cell, day)).toBe(first);
        expect(Object.isFrozen(first)).toBe(true);
        if (first.ok && first.value) {
          expect(Object.isFrozen(first.value)).toBe(true);
          expect(first.value.every((e) => Object.isFrozen(e))).toBe(true);
        }
      }
    }
    const special = '2026-12-24: 09:00-13:00, 2026-12-25: x';
    expect(cache.specialHours(special)).toEqual(parseSpecialHours(special));
    expect(cache.specialHours(special)).toBe(cache.specialHours(special));
  });

  it('keeps weekdays apart: an entry carries the day it was read for', () => {
    const cache = new HoursCache();
    const monday = cache.day('x', 1);
    const tuesday = cache.day('x', 2);
    expect(monday.ok && monday.value?.[0]?.day).toBe(1);
    expect(tuesday.ok && tuesday.value?.[0]?.day).toBe(2);
  });

  it('refuses to let a row change a shared result', () => {
    const cache = new HoursCache();
    const result = cache.day('09:00-17:00', 1);
    if (!result.ok || !result.value) throw new Error('expected hours');
    const entry = result.value[0]!;
    expect(() => {
      entry.open_time = '10:00';
    }).toThrow(TypeError);
    expect(() => result.value!.push(entry)).toThrow(TypeError);
  });

  it('stays correct past its size bound', () => {
    const cache = new HoursCache();
    for (let i = 0; i < 2500; i++) {
      // 1,200 distinct cells, more than one column's memory holds.
      const cell = `${String(Math.floor(i / 60) % 20).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}-23:00`;
      expect(cache.day(cell, 4)).toEqual(parseDayHours(cell, 4));
    }
  });
});
