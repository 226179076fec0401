import { describe, expect, it } from 'vitest';

import {
  boolColumn,
  dateColumn,
  numberColumn,
  textArrayLiteral,
  textColumn,
} from '../src/backend/postgres/batch-column.js';

describe('batch columns', () => {
  it('sends a value every item shares once, with no array', () => {
    expect(textColumn([{ a: 'x' }, { a: 'x' }], (i) => i.a)).toEqual([null, 'x']);
    expect(numberColumn([{ a: 3 }, { a: 3 }], (i) => i.a)).toEqual([null, 3]);
    expect(textColumn([{ a: null }, { a: null }], (i) => i.a)).toEqual([null, null]);
  });

  it('sends an array literal when items differ, NULL for null items', () => {
    expect(textColumn([{ a: 'x' }, { a: null }], (i) => i.a)).toEqual(['{"x",NULL}', null]);
    expect(numberColumn([{ a: 1 }, { a: null }, { a: 2.5 }], (i) => i.a)).toEqual(['{1,NULL,2.5}', null]);
    expect(boolColumn([{ a: true }, { a: false }, { a: null }], (i) => i.a)).toEqual(['{t,f,NULL}', null]);
    expect(boolColumn([{ a: true }, { a: true }], (i) => i.a)).toEqual([null, true]);
  });

  it('keeps every item in order when the first difference comes late, calling the getter once per item', () => {
    const items = [{ a: 'x' }, { a: 'x' }, { a: 'x' }, { a: 'y' }, { a: 'x' }];
    let calls = 0;
    const column = textColumn(items, (i) => {
      calls++;
      return i.a;
    });
    expect(column).toEqual(['{"x","x","x","y","x"}', null]);
    expect(calls).toBe(items.length);
  });

  it('quotes every text element and escapes quotes and backslashes', () => {
    expect(textArrayLiteral(['NULL', '', 'a,b', '{x}', 'say "hi"', 'c:\\dir', 'é'])).toBe(
      '{"NULL","","a,b","{x}","say \\"hi\\"","c:\\\\dir","é"}',
    );
  });

  it('compares instants, not Date objects, and sends them as UTC text', () => {
    const t = new Date('2026-01-02T03:04:05.678Z');
    expect(dateColumn([{ d: t }, { d: new Date(t.getTime()) }], (i) => i.d)).toEqual([
      null,
      '2026-01-02T03:04:05.678Z',
    ]);
    expect(dateColumn([{ d: t }, { d: null }], (i) => i.d)).toEqual([
      '{"2026-01-02T03:04:05.678Z",NULL}',
      null,
    ]);
  });
});
