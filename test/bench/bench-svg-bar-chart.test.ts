// The benchmark's SVG bar charts (bench/lib/svg-bar-chart.ts): well-formed XML whatever the labels
// hold, every bar and label present, and the axis scale helpers.
import { describe, expect, it } from 'vitest';

import {
  escapeXml,
  niceScale,
  renderBarChart,
  shortNumber,
  wrapLabel,
} from '../../bench/lib/svg-bar-chart.js';

/**
 * A strict enough XML well-formedness check for this renderer's output: every tag closes in order,
 * attribute values are quoted, and text holds no raw `<` or stray `&`. Returns the element names.
 */
function checkXml(xml: string): string[] {
  const stack: string[] = [];
  const names: string[] = [];
  const token = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let m: RegExpExecArray | null;
  let pos = 0;
  const body = xml.trim();
  while (pos < body.length) {
    token.lastIndex = pos;
    m = token.exec(body);
    if (!m) throw new Error(`malformed XML at ${pos}: ${body.slice(pos, pos + 60)}`);
    pos = token.lastIndex;
    const [, close, name, , selfClose, text] = m;
    if (text !== undefined) {
      if (/&(?!(amp|lt|gt|quot|apos);)/.test(text)) throw new Error(`unescaped & in ${text}`);
      if (stack.length === 0 && text.trim()) throw new Error(`text outside the root: ${text}`);
      continue;
    }
    if (close) {
      if (stack.pop() !== name) throw new Error(`</${name}> closes the wrong element`);
    } else {
      if (stack.length === 0 && names.length > 0) throw new Error('a second root element');
      names.push(name!);
      if (!selfClose) stack.push(name!);
    }
  }
  if (stack.length) throw new Error(`unclosed: ${stack.join(', ')}`);
  return names;
}

describe('renderBarChart', () => {
  const svg = renderBarChart({
    title: 'Throughput <median> & "more"',
    unit: 'jobs/s',
    groups: ['1p c=10', "4p c=10's"],
    series: [
      { name: 'TaskQ & co', values: [32_000, 25_000] },
      { name: 'graphile <tuned>', values: [35_000, undefined] },
      { name: 'pg-boss', values: [20, 80] },
    ],
  });

  it('is one well-formed svg document with a white background', () => {
    const names = checkXml(svg);
    expect(names[0]).toBe('svg');
    expect(svg).toContain('xmlns="http://www.w3.org/2000/svg"');
    expect(svg).toMatch(/<rect x="0" y="0" width="\d+" height="\d+" fill="#ffffff"\/>/);
  });

  it('draws one bar per measured value, labels groups and series, and marks gaps', () => {
    // Bars carry a <title> tooltip; the background and legend swatches do not.
    expect(svg.match(/<rect [^>]*><title>/g)).toHaveLength(5);
    expect(svg).toContain('TaskQ &amp; co');
    expect(svg).toContain('graphile &lt;tuned&gt;');
    expect(svg).toContain('4p c=10&apos;s');
    expect(svg).toContain('>–</text>');
    expect(svg).toContain('>32k</text>');
  });

  it('stays well-formed with nothing measured', () => {
    expect(() =>
      checkXml(
        renderBarChart({
          title: 't',
          unit: 'u',
          groups: ['a'],
          series: [{ name: 's', values: [undefined] }],
        }),
      ),
    ).not.toThrow();
  });
});

describe('scale helpers', () => {
  it('rounds the axis up to 1, 2 or 5 × a power of ten', () => {
    expect(niceScale(35_000)).toEqual({ top: 40_000, step: 10_000 });
    expect(niceScale(0.49)).toEqual({ top: 0.5, step: 0.1 });
    expect(niceScale(0)).toEqual({ top: 1, step: 0.2 });
  });

  it('shortens labels and escapes markup', () => {
    expect(shortNumber(86_973)).toBe('87k');
    expect(shortNumber(1_250_000)).toBe('1.3M');
    expect(shortNumber(2613)).toBe('2,613');
    expect(shortNumber(0.035)).toBe('0.035');
    expect(escapeXml(`<a & 'b'>`)).toBe('&lt;a &amp; &apos;b&apos;&gt;');
  });

  it('wraps long group labels at spaces', () => {
    expect(wrapLabel('10,000 per call (COPY where there is one)', 16)).toEqual([
      '10,000 per call',
      '(COPY where',
      'there is one)',
    ]);
    expect(wrapLabel('short', 16)).toEqual(['short']);
  });
});
