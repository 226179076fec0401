/**
 * A dependency-free grouped bar chart as a standalone SVG document, for docs/performance.md.
 * GitHub shows an SVG linked from markdown as an image (no scripts, no external fonts or styles),
 * on a light or dark page: the chart paints its own white background and uses only inline
 * attributes and a generic font family.
 */

/** One bar per group: a system's values, in the order of the chart's groups. */
export interface BarSeries {
  name: string;
  /** One value per group; undefined (or not finite) leaves a gap labelled "–". */
  values: (number | undefined)[];
  /** Fill colour (default: the palette's colour for the series' position). */
  color?: string;
}

/** A grouped bar chart: one cluster per group, one bar per series in each cluster. */
export interface BarChart {
  title: string;
  /** The values' unit, shown on the y axis. */
  unit: string;
  groups: string[];
  series: BarSeries[];
  /** Total width in px (default 760). */
  width?: number;
  /** Height of the plot area in px (default 260). */
  plotHeight?: number;
}

/** Colour-blind-safe palette (Okabe–Ito), one colour per series, repeating past eight. */
export const PALETTE = [
  '#0072B2',
  '#56B4E9',
  '#E69F00',
  '#F0E442',
  '#009E73',
  '#D55E00',
  '#CC79A7',
  '#000000',
];

/** Escapes text for an SVG text node or attribute. */
export function escapeXml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/** A "nice" axis maximum and step (1, 2 or 5 × 10^k) with about five ticks up to `max`. */
export function niceScale(max: number): { top: number; step: number } {
  if (!(max > 0) || !Number.isFinite(max)) return { top: 1, step: 0.2 };
  const rough = max / 5;
  const mag = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((k) => k * mag).find((s) => s >= rough) ?? 10 * mag;
  return { top: Math.ceil(max / step - 1e-9) * step, step };
}

/** A short label: 12,345 → "12.3k", 0.0312 → "0.031". */
export function shortNumber(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e6) return `${trim(v / 1e6)}M`;
  if (a >= 1e4) return `${trim(v / 1e3)}k`;
  if (a >= 100) return Math.round(v).toLocaleString('en-US');
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  if (a === 0) return '0';
  return v.toPrecision(2);
}

/** Splits a label into lines of at most about `maxChars` characters, at spaces. */
export function wrapLabel(label: string, maxChars: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of label.split(' ')) {
    if (line && line.length + 1 + word.length > maxChars) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

function trim(v: number): string {
  return (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1)).replace(/\.0$/, '');
}

/** Renders the chart as an SVG document (UTF-8 text). */
export function renderBarChart(chart: BarChart): string {
  const width = chart.width ?? 760;
  const plotH = chart.plotHeight ?? 260;
  const left = 64;
  const right = 16;
  const top = 40;
  // The legend goes below the group labels, in columns as wide as the longest name needs (about
  // 7 px per character at 12 px), as many rows as it takes.
  const longest = Math.max(1, ...chart.series.map((s) => s.name.length));
  const legendCols = Math.max(1, Math.floor((width - left - right) / (longest * 7 + 28)));
  const legendRows = Math.ceil(chart.series.length / legendCols);
  const plotW = width - left - right;
  const groupW = plotW / Math.max(1, chart.groups.length);
  // Group labels wrap to the group's width (about 6.5 px per character), adding rows below.
  const groupLines = chart.groups.map((g) => wrapLabel(g, Math.max(8, Math.floor(groupW / 6.5))));
  const labelRows = Math.max(1, ...groupLines.map((l) => l.length));
  const legendTop = top + plotH + 20 + labelRows * 14;
  const height = legendTop + legendRows * 20 + 8;
  const color = (si: number): string => chart.series[si]?.color ?? PALETTE[si % PALETTE.length]!;
  const finite = chart.series
    .flatMap((s) => s.values)
    .filter((v): v is number => v !== undefined && Number.isFinite(v));
  // Headroom above the tallest bar for its value label (written upright over narrow bars).
  const { top: yMax, step } = niceScale(Math.max(0, ...finite) * 1.15);
  const y = (v: number): number => top + plotH - (Math.max(0, v) / yMax) * plotH;

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
  );
  out.push(`<title>${escapeXml(chart.title)}</title>`);
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold" fill="#222222">${escapeXml(chart.title)}</text>`,
  );
  // Grid lines and y tick labels.
  for (let v = 0; v <= yMax + step / 2; v += step) {
    const yy = y(v).toFixed(1);
    out.push(
      `<line x1="${left}" y1="${yy}" x2="${width - right}" y2="${yy}" stroke="#dddddd" stroke-width="1"/>`,
    );
    // Thousands as "k" on the whole axis when its top needs them, never mixed with "8,000".
    const tick = yMax >= 1e4 ? `${trim(v / 1000)}k` : shortNumber(v);
    out.push(
      `<text x="${left - 6}" y="${yy}" dy="4" text-anchor="end" fill="#444444">${escapeXml(v === 0 ? '0' : tick)}</text>`,
    );
  }
  out.push(
    `<text transform="translate(14 ${top + plotH / 2}) rotate(-90)" text-anchor="middle" fill="#444444">${escapeXml(chart.unit)}</text>`,
  );
  // Bars: each group gets an equal slot; bars fill 80 % of it.
  // Bars fill 80 % of a group's slot, at most 56 px each; the cluster is centred in its slot.
  const n = Math.max(1, chart.series.length);
  const barW = Math.min(56, (groupW * 0.8) / n);
  chart.groups.forEach((g, gi) => {
    const x0 = left + gi * groupW + (groupW - barW * n) / 2;
    chart.series.forEach((s, si) => {
      const v = s.values[gi];
      const x = x0 + si * barW;
      const cx = (x + barW / 2).toFixed(1);
      if (v === undefined || !Number.isFinite(v)) {
        out.push(
          `<text x="${cx}" y="${top + plotH - 4}" text-anchor="middle" font-size="10" fill="#888888">–</text>`,
        );
        return;
      }
      const yy = y(v);
      out.push(
        `<rect x="${x.toFixed(1)}" y="${yy.toFixed(1)}" width="${Math.max(1, barW - 2).toFixed(1)}" height="${(top + plotH - yy).toFixed(1)}" fill="${color(si)}"><title>${escapeXml(`${s.name}, ${g}: ${shortNumber(v)} ${chart.unit}`)}</title></rect>`,
      );
      // The value over its bar: across a wide bar, upright over a narrow one.
      const label = escapeXml(shortNumber(v));
      if (barW >= 26)
        out.push(
          `<text x="${cx}" y="${(yy - 3).toFixed(1)}" text-anchor="middle" font-size="9" fill="#333333">${label}</text>`,
        );
      else
        out.push(
          `<text transform="translate(${(x + barW / 2 + 3).toFixed(1)} ${(yy - 3).toFixed(1)}) rotate(-90)" font-size="9" fill="#333333">${label}</text>`,
        );
    });
    groupLines[gi]!.forEach((line, li) =>
      out.push(
        `<text x="${(left + gi * groupW + groupW / 2).toFixed(1)}" y="${top + plotH + 18 + li * 14}" text-anchor="middle" fill="#222222">${escapeXml(line)}</text>`,
      ),
    );
  });
  out.push(
    `<line x1="${left}" y1="${top + plotH}" x2="${width - right}" y2="${top + plotH}" stroke="#888888" stroke-width="1"/>`,
  );
  // Legend.
  const colW = (width - left - right) / legendCols;
  chart.series.forEach((s, si) => {
    const x = left + (si % legendCols) * colW;
    const yy = legendTop + Math.floor(si / legendCols) * 20;
    out.push(`<rect x="${x.toFixed(1)}" y="${yy}" width="12" height="12" fill="${color(si)}"/>`);
    out.push(`<text x="${(x + 18).toFixed(1)}" y="${yy + 10}" fill="#222222">${escapeXml(s.name)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
