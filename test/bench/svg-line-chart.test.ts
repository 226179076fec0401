// The mixed load's chart renderer (bench/lib/svg-line-chart.ts) and its verdict
// (bench/lib/mixed-verdict.ts): pure functions, no services.
import { describe, expect, it } from 'vitest';

import { mixedVerdict, type MixedSample } from '../../bench/lib/mixed-verdict.js';
import { escapeXml, niceTicks, renderLineChart } from '../../bench/lib/svg-line-chart.js';

/**
 * A strict well-formedness check for the XML subset the renderer writes: one root element, every
 * start tag closed in order, attributes double-quoted, no raw `<` or stray `&` in text or values.
 * Returns the element names in document order (for assertions), or throws at the first fault.
 */
function checkWellFormed(xml: string): string[] {
  const names: string[] = [];
  const stack: string[] = [];
  let roots = 0;
  const token = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)|(<)/gy;
  const entity = /&(?!(?:amp|lt|gt|quot|apos|#\d+);)/;
  let m: RegExpExecArray | null;
  let pos = 0;
  while (pos < xml.length && (m = token.exec(xml)) !== null) {
    pos = token.lastIndex;
    const [, close, name, attrs, selfClose, text, stray] = m;
    if (stray) throw new Error(`malformed tag at ${m.index}: ${xml.slice(m.index, m.index + 40)}`);
    if (text !== undefined) {
      if (entity.test(text)) throw new Error(`stray & in text: ${text.slice(0, 40)}`);
      if (stack.length === 0 && text.trim() !== '') throw new Error('text outside the root');
      continue;
    }
    if (attrs && entity.test(attrs)) throw new Error(`stray & in attributes of <${name}>`);
    if (close) {
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open}>`);
      continue;
    }
    if (stack.length === 0 && ++roots > 1) throw new Error('more than one root element');
    names.push(name!);
    if (!selfClose) stack.push(name!);
  }
  if (pos !== xml.length) throw new Error(`unparsed input at ${pos}`);
  if (stack.length) throw new Error(`unclosed <${stack.join('>, <')}>`);
  return names;
}

describe("checkWellFormed (the test's own checker)", () => {
  it('rejects what a renderer bug would write', () => {
    expect(() => checkWellFormed('<svg><g></svg>')).toThrow();
    expect(() => checkWellFormed('<svg><text>a & b</text></svg>')).toThrow();
    expect(() => checkWellFormed('<svg x=1></svg>')).toThrow();
    expect(() => checkWellFormed('<svg></svg><svg></svg>')).toThrow();
    expect(checkWellFormed('<svg a="1"><g/><text>a &amp; b</text></svg>')).toEqual(['svg', 'g', 'text']);
  });
});

describe('renderLineChart', () => {
  const svg = renderLineChart({
    title: 'Latency <p99> & p50',
    xLabel: 'minutes since the load started',
    yLabel: 'ms',
    series: [
      {
        name: 'p50',
        points: [
          [0, 1.2],
          [1, 1.4],
          [2, null],
          [3, 1.3],
        ],
      },
      {
        name: 'p99 "high" & low',
        points: [
          [0, 7],
          [1, 9.5],
          [3, 8],
        ],
        dashed: true,
      },
    ],
  });

  it('writes a well-formed standalone SVG document', () => {
    const names = checkWellFormed(svg);
    expect(names[0]).toBe('svg');
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" /);
    // The title's markup characters are escaped, not markup.
    expect(svg).toContain('<title>Latency &lt;p99&gt; &amp; p50</title>');
  });

  it('draws one path per series, named, with a gap at a missing reading', () => {
    const paths = [...svg.matchAll(/<path class="series" data-series="([^"]*)" d="([^"]*)"/g)];
    expect(paths.map((p) => p[1])).toEqual(['p50', 'p99 &quot;high&quot; &amp; low']);
    // p50: three segments' worth of points, the null starting a new subpath.
    expect(paths[0]![2]!.match(/M/g)).toHaveLength(2);
    expect(paths[1]![2]!.match(/M/g)).toHaveLength(1);
    expect(svg).toContain('stroke-dasharray="6 3"');
  });

  it('labels both axes and lists every series in the legend', () => {
    expect(svg).toMatch(/<text class="x-label"[^>]*>minutes since the load started<\/text>/);
    expect(svg).toMatch(/<text class="y-label"[^>]*>ms<\/text>/);
    const legend = svg.slice(svg.indexOf('<g class="legend"'));
    expect(legend).toContain('>p50</text>');
    expect(legend).toContain('>p99 &quot;high&quot; &amp; low</text>');
    // y ticks from 0 through the largest value, at a round step.
    const yTicks = [...svg.slice(svg.indexOf('class="y-ticks"')).matchAll(/>([\d.,]+)<\/text>/g)]
      .slice(0, 10)
      .map((t) => t[1]);
    expect(yTicks[0]).toBe('0');
    expect(yTicks).toContain('10');
  });

  it('renders an empty chart without NaN', () => {
    const empty = renderLineChart({
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
      series: [{ name: 's', points: [] }],
    });
    checkWellFormed(empty);
    expect(empty).not.toContain('NaN');
  });
});

describe('niceTicks / escapeXml', () => {
  it('picks 1-2-5 steps that enclose the range', () => {
    expect(niceTicks(0, 9.5, 5)).toEqual([0, 2, 4, 6, 8, 10]);
    expect(niceTicks(0, 0.3, 3)).toEqual([0, 0.1, 0.2, 0.3]);
    expect(niceTicks(5, 5)).toEqual([2, 3, 4, 5, 6, 7, 8]);
  });

  it('escapes the five XML specials', () => {
    expect(escapeXml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;');
  });
});

describe('mixedVerdict', () => {
  const sample = (tSec: number, p99: number, rss: number): MixedSample => ({
    tSec,
    offeredPerSec: 100,
    completedPerSec: 100,
    thrownPerSec: 0,
    latencyP50Ms: 1,
    latencyP99Ms: p99,
    highP50Ms: null,
    highP99Ms: null,
    latencyN: 1000,
    enqueueCallP50Ms: null,
    enqueueCallP99Ms: null,
    workerCpuPercent: [null],
    producerCpuPercent: 0,
    rssBytes: [rss * 2 ** 20],
    heapUsedBytes: [20 * 2 ** 20],
    producerRssBytes: 0,
    pgCpuPercent: null,
    machineBusyPercent: null,
    pending: 0,
    scheduled: 0,
    running: 0,
    jobsTableBytes: 0,
    producerLag: 0,
  });

  it('compares minutes 2–4 with the last 2 of 10 and says growth only past the tolerance', () => {
    const flat = Array.from({ length: 60 }, (_, i) => sample((i + 1) * 10, 5, 100));
    const v = mixedVerdict(flat, 600, 100);
    expect(v.early).toEqual({ fromSec: 120, toSec: 240 });
    expect(v.late).toEqual({ fromSec: 480, toSec: 600 });
    expect(v.growth).toBe(false);
    expect(v.keptUp).toBe(true);

    const growing = Array.from({ length: 60 }, (_, i) => sample((i + 1) * 10, 5, 100 + i));
    const g = mixedVerdict(growing, 600, 100);
    expect(g.lines.find((l) => l.metric === 'worker 1 RSS')!.growth).toBe(true);
    expect(g.lines.find((l) => l.metric === 'latency p99')!.growth).toBe(false);
    expect(g.growth).toBe(true);
  });
});
