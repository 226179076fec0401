import { describe, expect, it } from 'vitest';

import {
  boolColumn,
  dateColumn,
  epochMsColumn,
  jsonColumn,
  numberColumn,
  textArrayLiteral,
  textColumn,
} from '../../src/backend/postgres/batch-column.js';

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

  it('sends instants as epoch milliseconds for an epoch column: one number shared, or an array', () => {
    const a = new Date('2026-11-30T23:59:59.001Z');
    const b = new Date('2026-11-30T23:59:59.999Z');
    expect(epochMsColumn([{ d: a }, { d: new Date(a.getTime()) }], (i) => i.d)).toEqual([null, a.getTime()]);
    expect(epochMsColumn([{ d: a }, { d: null }, { d: b }], (i) => i.d)).toEqual([
      `{${a.getTime()},NULL,${b.getTime()}}`,
      null,
    ]);
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

  it('escapes the same way with and without NULLs among the elements (one pass or one per value)', () => {
    const values = ['say "hi"', 'c:\\dir', '{"i":1}', '', 'a,b'];
    const withNull = textArrayLiteral([...values, null]);
    expect(withNull).toBe(`${textArrayLiteral(values).slice(0, -1)},NULL}`);
    expect(textArrayLiteral(values)).toBe('{"say \\"hi\\"","c:\\\\dir","{\\"i\\":1}","","a,b"}');
  });

  it('keeps a value holding NUL as one element (the server refuses it), never splitting it in two', () => {
    expect(textArrayLiteral(['a\u0000b', 'c'])).toBe('{"a\u0000b","c"}');
  });

  it('serialises JSON objects and arrays per item, equal ones once, and never confuses different ones', () => {
    let calls = 0;
    const meta = [
      { batch_id: 'b1' },
      { batch_id: 'b1' },
      { batch_id: 'b1', singleton: true },
      { batch_id: 'b2' },
      { batch_id: 'b2', nested: { x: 1 } },
      { batch_id: 'b2', nested: { x: 2 } },
      {},
      [],
      ['b2'],
      { 0: 'b2' },
    ];
    const column = jsonColumn(meta, (m) => {
      calls++;
      return m;
    });
    expect(calls).toBe(meta.length);
    expect(column[1]).toBeNull();
    const parsed = (column[0] as string)
      .slice(2, -2)
      .split('","')
      .map((t) => JSON.parse(t.replaceAll('\\"', '"').replaceAll('\\\\', '\\')) as unknown);
    expect(parsed).toEqual(meta);
    // Equal values in distinct objects collapse to one parameter, as any shared value does.
    expect(jsonColumn([{ a: 1 }, { a: 1 }, { a: 1 }], (m) => m)).toEqual([null, '{"a":1}']);
    expect(jsonColumn([[], []], (m) => m)).toEqual([null, '[]']);
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
