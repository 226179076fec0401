/**
 * A small, dependency-free SVG line chart: axes with "nice" ticks, axis labels, a title, several
 * series and a legend. It writes a standalone SVG document (with its own `xmlns` and a white
 * background) so that GitHub's markdown can show it through `<img src="…svg">`, which renders the
 * file as an image: no scripts, no external fonts or styles, text in a generic sans-serif.
 */

/** One line of a chart: points in data units; a `null` y leaves a gap (no reading in that interval). */
export interface ChartSeries {
  name: string;
  points: readonly (readonly [number, number | null])[];
  /** Stroke colour; default: the next colour of the palette. */
  color?: string;
  /** Draw the line dashed (e.g. a second process, a percentile beside its median). */
  dashed?: boolean;
}

/** What to draw. Sizes are in SVG user units (pixels at 100 %). */
export interface LineChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly ChartSeries[];
  /** Default 720 × 360. */
  width?: number;
  height?: number;
  /** Start the y axis at 0 (default true): growth is judged against zero, not against the minimum. */
  yFromZero?: boolean;
}

/** Colour-blind-friendly palette (Okabe–Ito), in the order series take them. */
export const CHART_PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000'];

const MARGIN = { top: 36, right: 20, bottom: 52, left: 70 };
const LEGEND_ROW = 16;
/** Approximate width of a 12 px sans-serif character, for laying out legend entries. */
const CHAR_WIDTH = 7;

/** Where each legend entry goes: rows between the title and the plot, so no line runs under one. */
function legendLayout(names: readonly string[], left: number, right: number): { x: number; row: number }[] {
  const out: { x: number; row: number }[] = [];
  let x = left;
  let row = 0;
  for (const name of names) {
    const w = 30 + CHAR_WIDTH * name.length + 16;
    if (x > left && x + w > right) {
      x = left;
      row++;
    }
    out.push({ x, row });
    x += w;
  }
  return out;
}

/** Escapes text for XML content and attribute values. */
export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/**
 * Tick values covering [min, max] at a step of 1, 2 or 5 × 10^k, about `target` of them: steps a
 * reader can add up at a glance. The first and last tick enclose the range.
 */
export function niceTicks(min: number, max: number, target = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  if (max < min) [min, max] = [max, min];
  if (max === min) {
    // A flat series still needs an axis: widen around the value.
    const pad = min === 0 ? 1 : Math.abs(min) * 0.5;
    min -= pad;
    max += pad;
  }
  const raw = (max - min) / Math.max(1, target);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  const step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
  const first = Math.floor(min / step) * step;
  const last = Math.ceil(max / step) * step;
  const ticks: number[] = [];
  // Round each tick to the step's precision, so that 0.1 + 0.2 prints as 0.3.
  const digits = Math.max(0, -Math.floor(Math.log10(step)));
  for (let v = first; v <= last + step / 2; v += step) ticks.push(Number(v.toFixed(digits)));
  return ticks;
}

/** A tick label: thousands separated, at most 3 significant decimals. */
export function formatTick(v: number): string {
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  return String(Number(v.toPrecision(3)));
}

/** Renders the chart as a standalone SVG document. */
export function renderLineChart(options: LineChartOptions): string {
  const width = options.width ?? 720;
  const height = options.height ?? 360;
  const plotLeft = MARGIN.left;
  const plotRight = width - MARGIN.right;
  const legend = legendLayout(
    options.series.map((s) => s.name),
    plotLeft,
    plotRight,
  );
  const legendRows = legend.length ? legend[legend.length - 1]!.row + 1 : 0;
  const plotTop = MARGIN.top + legendRows * LEGEND_ROW + 8;
  const plotBottom = height - MARGIN.bottom;

  const xs: number[] = [];
  const ys: number[] = [];
  for (const s of options.series)
    for (const [x, y] of s.points) {
      if (Number.isFinite(x)) xs.push(x);
      if (y !== null && Number.isFinite(y)) ys.push(y);
    }
  const xTicks = niceTicks(xs.length ? Math.min(...xs) : 0, xs.length ? Math.max(...xs) : 1, 8);
  const yMinData = ys.length ? Math.min(...ys) : 0;
  const yTicks = niceTicks(
    options.yFromZero === false ? yMinData : Math.min(0, yMinData),
    ys.length ? Math.max(...ys) : 1,
    5,
  );
  const x0 = xTicks[0]!;
  const x1 = xTicks[xTicks.length - 1]!;
  const y0 = yTicks[0]!;
  const y1 = yTicks[yTicks.length - 1]!;
  const px = (x: number) => plotLeft + ((x - x0) / (x1 - x0)) * (plotRight - plotLeft);
  const py = (y: number) => plotBottom - ((y - y0) / (y1 - y0)) * (plotBottom - plotTop);
  const r = (n: number) => n.toFixed(1);

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
  );
  out.push(`<title>${escapeXml(options.title)}</title>`);
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(options.title)}</text>`,
  );

  // Grid and ticks.
  out.push('<g class="y-axis" stroke="#dddddd">');
  for (const t of yTicks)
    out.push(`<line x1="${plotLeft}" y1="${r(py(t))}" x2="${plotRight}" y2="${r(py(t))}"/>`);
  out.push('</g>');
  out.push('<g class="y-ticks" text-anchor="end" fill="#333333">');
  for (const t of yTicks) out.push(`<text x="${plotLeft - 6}" y="${r(py(t) + 4)}">${formatTick(t)}</text>`);
  out.push('</g>');
  out.push('<g class="x-ticks" text-anchor="middle" fill="#333333">');
  for (const t of xTicks) {
    out.push(
      `<line x1="${r(px(t))}" y1="${plotBottom}" x2="${r(px(t))}" y2="${plotBottom + 5}" stroke="#333333"/>`,
    );
    out.push(`<text x="${r(px(t))}" y="${plotBottom + 18}">${formatTick(t)}</text>`);
  }
  out.push('</g>');
  out.push(
    `<path d="M${plotLeft},${plotTop} V${plotBottom} H${plotRight}" fill="none" stroke="#333333" class="axes"/>`,
  );

  // Axis labels.
  out.push(
    `<text class="x-label" x="${r((plotLeft + plotRight) / 2)}" y="${height - 12}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
  );
  const yMid = r((plotTop + plotBottom) / 2);
  out.push(
    `<text class="y-label" x="16" y="${yMid}" text-anchor="middle" transform="rotate(-90 16 ${yMid})">${escapeXml(options.yLabel)}</text>`,
  );

  // Series: one path each, a gap (new "M") after every missing reading.
  options.series.forEach((s, i) => {
    const color = s.color ?? CHART_PALETTE[i % CHART_PALETTE.length]!;
    let d = '';
    let pen = false;
    for (const [x, y] of s.points) {
      if (y === null || !Number.isFinite(y) || !Number.isFinite(x)) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${r(px(x))},${r(py(y))} `;
      pen = true;
    }
    out.push(
      `<path class="series" data-series="${escapeXml(s.name)}" d="${d.trim()}" fill="none" stroke="${color}" stroke-width="1.8"${s.dashed ? ' stroke-dasharray="6 3"' : ''}/>`,
    );
  });

  // Legend: entries in rows between the title and the plot.
  out.push(`<g class="legend" transform="translate(0,${MARGIN.top})">`);
  options.series.forEach((s, i) => {
    const color = s.color ?? CHART_PALETTE[i % CHART_PALETTE.length]!;
    const { x, row } = legend[i]!;
    const y = row * LEGEND_ROW + LEGEND_ROW / 2;
    out.push(
      `<line x1="${x}" y1="${y}" x2="${x + 24}" y2="${y}" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 3"' : ''}/>`,
    );
    out.push(`<text x="${x + 30}" y="${y + 4}">${escapeXml(s.name)}</text>`);
  });
  out.push('</g>');
  out.push('</svg>');
  return out.join('\n') + '\n';
}
