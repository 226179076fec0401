/**
 * Several runs' results taken together (bench/summarize.ts): each target row's ratio in every run
 * and its median over the runs with the verdict, the median over runs of every system's figure in
 * every case, the markdown that reports them and the charts' data. Every run's own figure is
 * already the median of its rounds; runs are never pooled round by round, since the machine's speed
 * moves between runs and only ratios within one run compare like with like.
 */
import type { Report } from './report.js';
import { median } from './stats.js';
import { ENQUEUE_CASES } from '../workloads/enqueue.js';
import { LATENCY_CASES, PEER_LOAD_SYSTEM, isPeer, peerLoadCase } from '../workloads/latency.js';
import { PALETTE, type BarChart } from './svg-bar-chart.js';
import {
  PROCESSING_ROWS,
  describeMeasure,
  fig,
  targetRows,
  verdict,
  type MedianLookup,
  type RowMeasure,
  type TargetRow,
  type Verdict,
} from './target-rows.js';

/** The fewest full runs a verdict stands on (issue 68). */
export const MIN_RUNS = 3;

/** One run's medians as a lookup (the JSON `run.ts` writes). */
export function runLookup(run: Pick<Report, 'series'>): MedianLookup {
  return (w, c, metric, system) => {
    const s = run.series.find(
      (x) => x.workload === w && x.case === c && x.metric === metric && x.system === system,
    );
    if (!s || s.summary.n === 0 || !Number.isFinite(s.summary.median)) return undefined;
    return s.summary.median;
  };
}

/** A target row over several runs. */
export interface RowSummary {
  row: TargetRow;
  /** Each run's measure, in the order of the runs (undefined: not measured in that run). */
  perRun: (RowMeasure | undefined)[];
  /** Median of the measured runs' ratios. */
  median: number | undefined;
  /** Runs that measured the row. */
  runs: number;
  verdict: Verdict | 'not measured';
}

/** Every system id that appears in any of the runs, in first-seen order. */
export function systemsOf(runs: readonly Pick<Report, 'series'>[]): string[] {
  return [...new Set(runs.flatMap((r) => r.series.map((s) => s.system)))];
}

/** Each target row's ratio per run, the median over runs and its verdict. */
export function summarizeTargets(runs: readonly Pick<Report, 'series'>[]): RowSummary[] {
  const lookups = runs.map(runLookup);
  return targetRows(systemsOf(runs)).map((row) => {
    const perRun = lookups.map((l) => row.measure(l));
    const ratios = perRun.filter((m): m is RowMeasure => m !== undefined).map((m) => m.ratio);
    if (ratios.length === 0) return { row, perRun, median: undefined, runs: 0, verdict: 'not measured' };
    const med = median(ratios);
    return { row, perRun, median: med, runs: ratios.length, verdict: verdict(med, row.line, row.direction) };
  });
}

/** One (workload, case, metric, system) figure over runs. */
export interface CellSummary {
  workload: string;
  case: string;
  metric: string;
  system: string;
  /** Each run's median (undefined where that run did not measure it). */
  perRun: (number | undefined)[];
  median: number | undefined;
  /** A run marked it partial (the system was cut short). */
  partial: boolean;
}

/** The median over runs of every series any run has, in the first run's order of appearance. */
export function summarizeCells(runs: readonly Pick<Report, 'series'>[]): CellSummary[] {
  const keys = new Map<string, Omit<CellSummary, 'perRun' | 'median' | 'partial'>>();
  for (const r of runs)
    for (const s of r.series) {
      const k = JSON.stringify([s.workload, s.case, s.metric, s.system]);
      if (!keys.has(k))
        keys.set(k, { workload: s.workload, case: s.case, metric: s.metric, system: s.system });
    }
  const lookups = runs.map(runLookup);
  return [...keys.values()].map((k) => {
    const perRun = lookups.map((l) => l(k.workload, k.case, k.metric, k.system));
    const measured = perRun.filter((v): v is number => v !== undefined);
    const partial = runs.some((r) =>
      r.series.some(
        (s) =>
          s.workload === k.workload &&
          s.case === k.case &&
          s.metric === k.metric &&
          s.system === k.system &&
          s.notes.some((n) => n.startsWith('partial')),
      ),
    );
    return { ...k, perRun, median: measured.length ? median(measured) : undefined, partial };
  });
}

/** The median over runs of one figure (undefined when no run measured it). */
function cell(
  cells: readonly CellSummary[],
  w: string,
  c: string,
  metric: string,
  system: string,
): number | undefined {
  return cells.find((x) => x.workload === w && x.case === c && x.metric === metric && x.system === system)
    ?.median;
}

/** A chart to write: its file name (in the SVG directory) and its data. */
export interface ChartSpec {
  file: string;
  /** Alt text of the markdown image. */
  alt: string;
  chart: BarChart;
}

/**
 * The charts: throughput per processing case, enqueue rates (single and bulk apart: their scales
 * differ by thirty times), and Postgres's CPU and WAL per job at 1 process, c=10, each per system.
 * A chart with nothing measured is left out.
 */
export function chartSpecs(
  cells: readonly CellSummary[],
  systems: readonly string[],
  titles: ReadonlyMap<string, string>,
): ChartSpec[] {
  const name = (s: string): string => titles.get(s) ?? s;
  // A system's colour is the same in every chart: by its place among all the runs' systems.
  const colorOf = (s: string): string => PALETTE[Math.max(0, systems.indexOf(s)) % PALETTE.length]!;
  const specs: ChartSpec[] = [];
  const grouped = (
    file: string,
    title: string,
    unit: string,
    w: string,
    cases: readonly { case: string; label: string }[],
    metric: string,
  ): void => {
    // Cases no run measured (a quick run has no c=50 or 4 processes) and systems with no figure
    // are left out.
    const measured = cases.filter((c) =>
      systems.some((s) => cell(cells, w, c.case, metric, s) !== undefined),
    );
    const series = systems
      .map((s) => ({
        name: name(s),
        values: measured.map((c) => cell(cells, w, c.case, metric, s)),
        color: colorOf(s),
      }))
      .filter((s) => s.values.some((v) => v !== undefined));
    if (series.length)
      specs.push({ file, alt: title, chart: { title, unit, groups: measured.map((c) => c.label), series } });
  };
  grouped(
    'processing-throughput.svg',
    'Processing no-op jobs: throughput (median over runs)',
    'jobs/s',
    'processing',
    PROCESSING_ROWS,
    'jobs/s',
  );
  grouped(
    'enqueue-single.svg',
    'Single enqueue: jobs/s (median over runs)',
    'jobs/s',
    'enqueue',
    [
      { case: ENQUEUE_CASES.single, label: 'one call at a time' },
      { case: ENQUEUE_CASES.concurrent, label: '16 concurrent callers' },
    ],
    'jobs/s',
  );
  grouped(
    'enqueue-bulk.svg',
    'Bulk enqueue: jobs/s (median over runs)',
    'jobs/s',
    'enqueue',
    [
      { case: ENQUEUE_CASES.bulk, label: '1,000 per call' },
      { case: ENQUEUE_CASES.copy, label: '10,000 per call (COPY where there is one)' },
    ],
    'jobs/s',
  );
  // One bar per system in a single group, so that each system keeps its colour and legend entry.
  const perSystem = (file: string, title: string, unit: string, metric: string): void => {
    const c10 = PROCESSING_ROWS[0].case;
    const series = systems
      .map((s) => ({ name: name(s), values: [cell(cells, 'processing', c10, metric, s)], color: colorOf(s) }))
      .filter((s) => s.values[0] !== undefined);
    if (series.length) specs.push({ file, alt: title, chart: { title, unit, groups: [c10], series } });
  };
  perSystem(
    'postgres-cpu.svg',
    'Postgres CPU per job, 1 process, c=10 (median over runs)',
    'µs/job',
    'Postgres CPU (µs/job)',
  );
  perSystem('wal.svg', 'WAL per job, 1 process, c=10 (median over runs)', 'kB/job', 'WAL (kB/job)');
  return specs;
}

/** What the markdown needs besides the runs. */
export interface SummaryInput {
  runs: readonly Report[];
  /** A label per run (its file name). */
  names: readonly string[];
  /** The charts and the path of their directory relative to the markdown (null: no charts). */
  charts: { specs: readonly ChartSpec[]; relDir: string } | null;
}

const VERDICT_TEXT: Record<RowSummary['verdict'], string> = {
  met: 'met',
  level: 'level (±3 %)',
  missed: '**missed**',
  'not measured': 'not measured',
};

function esc(s: string): string {
  return s.replace(/\|/g, '\\|');
}

/** A short column label per run: its commit and date. */
function runLabel(r: Report): string {
  return `${r.env.commit.split(' ')[0]} ${r.env.date.slice(5, 16).replace('T', ' ')}`;
}

/** The whole report as markdown. */
export function renderSummaryMarkdown(input: SummaryInput): string {
  const { runs } = input;
  const latest = runs[runs.length - 1]!;
  const titles = new Map<string, string>();
  for (const r of runs) for (const s of r.systems) titles.set(s.id, s.title);
  const systems = systemsOf(runs);
  const targets = summarizeTargets(runs);
  const cells = summarizeCells(runs);
  const out: string[] = [];
  const full = runs.filter((r) => !r.options.quick).length;
  out.push(`# TaskQ benchmark summary over ${runs.length} run${runs.length === 1 ? '' : 's'}`);
  out.push('');
  out.push(
    `Each run's figure is the median of its rounds (systems alternating in rotated order); a row's ratio is taken in each run, and the verdict is its median over the runs: **met** when it reaches the line, **level** within ±${3} % of it, else **missed**.` +
      (full < MIN_RUNS
        ? ` ${full === 0 ? 'None' : `Only ${full}`} of these runs ${full === 1 ? 'is a full run' : 'are full runs'}: a verdict stands on at least ${MIN_RUNS} full runs, so these are indicative only.`
        : ''),
  );
  out.push('');
  out.push('## Runs and hardware');
  out.push('');
  out.push(
    '| run | date (UTC) | commit | kind | CPU | cores, memory | Node | PostgreSQL | Redis | load average (median, max) |',
  );
  out.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  runs.forEach((r, i) => {
    const e = r.env;
    out.push(
      `| ${esc(input.names[i] ?? String(i + 1))} | ${e.date.slice(0, 16).replace('T', ' ')} | ${esc(e.commit)} | ${r.options.quick ? 'quick' : 'full'}, ${r.options.rounds} round${r.options.rounds === 1 ? '' : 's'} | ${esc(e.cpu)} | ${e.cores}, ${e.memoryGiB} GiB | ${e.node} | ${esc(e.postgres.replace(/^PostgreSQL /, ''))} | ${esc(e.redis)} | ${e.loadAvg.median.toFixed(1)}, ${e.loadAvg.max.toFixed(1)} |`,
    );
  });
  out.push('');
  out.push('## Reproduce');
  out.push('');
  out.push('```sh');
  out.push('npm ci');
  out.push('npm ci --prefix bench/node22   # graphile-worker 0.18 and pg-boss 12, under Node 22');
  out.push('for i in 1 2 3; do npm run bench; done   # three full runs → bench/results/<timestamp>.json');
  out.push('mkdir -p docs/performance/runs && cp bench/results/<the three>.json docs/performance/runs/');
  out.push(
    'npx tsx bench/summarize.ts --results docs/performance/runs --svg-dir docs/performance --out docs/performance/latest-run.md',
  );
  out.push('```');
  out.push('');
  out.push('## Targets');
  out.push('');
  out.push(
    "Ratio = TaskQ ÷ the reference (for scale: cost at 1M rows ÷ at 10k rows). Throughput rows need a ratio ≥ the line; latency and cost rows ≤ it. For throughput the better configuration of TaskQ and of graphile-worker counts; at a peer's load TaskQ (defaults) is offered the rate that peer was offered (half of its own drain rate).",
  );
  out.push('');
  out.push(`| target | line | ${runs.map((r) => esc(runLabel(r))).join(' | ')} | median | verdict |`);
  out.push(`| --- | ---: | ${runs.map(() => '---:').join(' | ')} | ---: | --- |`);
  for (const t of targets) {
    const line = `${t.row.direction === 'atLeast' ? '≥' : '≤'} ${t.row.line.toFixed(1)}×`;
    const per = t.perRun.map((m) => (m ? `${m.ratio.toFixed(2)}×` : '–'));
    const med = t.median === undefined ? '–' : `**${t.median.toFixed(2)}×**`;
    const v = `${VERDICT_TEXT[t.verdict]}${t.runs > 0 && t.runs < MIN_RUNS ? ` (${t.runs} run${t.runs === 1 ? '' : 's'})` : ''}`;
    out.push(`| ${esc(t.row.target)} | ${line} | ${per.join(' | ')} | ${med} | ${v} |`);
  }
  const lastMeasured = targets
    .map((t) => ({ t, m: t.perRun[t.perRun.length - 1] }))
    .filter((x): x is { t: RowSummary; m: RowMeasure } => x.m !== undefined);
  if (lastMeasured.length) {
    out.push('');
    out.push('<details><summary>The figures behind each ratio in the latest run</summary>');
    out.push('');
    for (const { t, m } of lastMeasured) out.push(`- ${esc(t.row.target)}: ${describeMeasure(m)}`);
    out.push('');
    out.push('</details>');
  }
  if (input.charts && input.charts.specs.length) {
    out.push('');
    out.push('## Charts');
    out.push('');
    for (const c of input.charts.specs)
      out.push(
        `<img src="${input.charts.relDir ? `${input.charts.relDir}/` : ''}${c.file}" alt="${c.alt.replace(/"/g, '&quot;')}" width="760">`,
        '',
      );
  }
  out.push('');
  out.push('## Medians over the runs, every system and case');
  out.push('');
  out.push("Median over the runs of each run's median; \\* a run cut the system short (partial).");
  // The CPU breakdown of the latency workload's loaded phases is diagnostic detail: left to the
  // runs' own reports.
  const workloads = [...new Set(cells.map((c) => c.workload))].filter((w) => w !== 'latency-cpu');
  for (const w of workloads) {
    // TaskQ's rounds at each peer's load have a table of their own, beside the peer's figures.
    const own = cells.filter((c) => c.workload === w && !(w === 'latency' && isPeerLoadCase(c.case)));
    const cols = systems.filter((s) => own.some((c) => c.system === s));
    out.push('');
    out.push(`### ${w}`);
    out.push('');
    out.push(`| case | metric | ${cols.map((s) => esc(titles.get(s) ?? s)).join(' | ')} |`);
    out.push(`| --- | --- | ${cols.map(() => '---:').join(' | ')} |`);
    const rows = [...new Set(own.map((c) => JSON.stringify([c.case, c.metric])))].map(
      (k) => JSON.parse(k) as [string, string],
    );
    for (const [c, metric] of rows) {
      const vals = cols.map((s) => {
        const x = own.find((y) => y.case === c && y.metric === metric && y.system === s);
        return x?.median === undefined ? '–' : `${fig(x.median)}${x.partial ? '\\*' : ''}`;
      });
      out.push(`| ${esc(c)} | ${esc(metric)} | ${vals.join(' | ')} |`);
    }
  }
  const same = sameLoadTable(cells, systems, titles);
  if (same.length) out.push('', '### latency at the same offered load', '', ...same);
  out.push('');
  out.push(`## Settings of each system (run ${esc(input.names[input.names.length - 1] ?? '')})`);
  out.push('');
  for (const s of latest.systems)
    out.push(`- **${esc(s.title)}** (\`${s.id}\`, ${esc(s.pkg)}): ${esc(s.settings)}`);
  const unavailable = latest.unavailable ?? [];
  if (unavailable.length) {
    out.push('');
    for (const u of unavailable) out.push(`- \`${u.id}\`: unavailable (${esc(u.reason)})`);
  }
  out.push('');
  return out.join('\n');
}

/** A latency case in which TaskQ was offered a peer's load (either naming). */
function isPeerLoadCase(c: string): boolean {
  return c === LATENCY_CASES.legacyPeerLoad || /^at .+'s 50 % load$/.test(c);
}

/**
 * Each peer's p50 / p99 under its own 50 % load next to TaskQ's (defaults) offered the same rate:
 * medians over runs.
 */
function sameLoadTable(
  cells: readonly CellSummary[],
  systems: readonly string[],
  titles: ReadonlyMap<string, string>,
): string[] {
  const rows: string[] = [];
  for (const peer of systems.filter(isPeer)) {
    const cases =
      peer === 'graphile' ? [peerLoadCase(peer), LATENCY_CASES.legacyPeerLoad] : [peerLoadCase(peer)];
    const tq = (metric: string): number | undefined => {
      for (const c of cases) {
        const v = cell(cells, 'latency', c, metric, PEER_LOAD_SYSTEM);
        if (v !== undefined) return v;
      }
      return undefined;
    };
    const own = (metric: string): number | undefined =>
      cell(cells, 'latency', LATENCY_CASES.load, metric, peer);
    const vals = [
      own('offered load (jobs/s)'),
      own('p50 (ms)'),
      tq('p50 (ms)'),
      own('p99 (ms)'),
      tq('p99 (ms)'),
    ];
    if (vals[2] === undefined && vals[4] === undefined) continue;
    rows.push(
      `| ${esc(titles.get(peer) ?? peer)} | ${vals.map((v) => (v === undefined ? '–' : fig(v))).join(' | ')} |`,
    );
  }
  if (rows.length === 0) return [];
  return [
    '| peer | offered (jobs/s) | peer p50 (ms) | TaskQ p50 (ms) | peer p99 (ms) | TaskQ p99 (ms) |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ];
}
