/**
 * The performance issue's target rows, as data: each row turns one run's medians into a ratio and
 * says which side of its line counts as met. `targets.ts` checks one run with them; `summary.ts`
 * takes each row's ratio in every run and checks the median over runs (issue 68: "a row is met when
 * the median ratio over at least three full runs reaches it; a row within ±3 % of the line is
 * reported as level").
 */
import { ENQUEUE_CASES } from '../workloads/enqueue.js';
import { LATENCY_CASES, PEER_LOAD_SYSTEM, isPeer, peerLoadCase } from '../workloads/latency.js';
import { SCALE_METRICS, sizeLabel } from '../workloads/scale.js';

/** One run's median over its rounds of a series, if it was measured. */
export type MedianLookup = (
  workload: string,
  caseName: string,
  metric: string,
  system: string,
) => number | undefined;

/** A row's two figures in one run and their ratio (`value ÷ reference`). */
export interface RowMeasure {
  value: number;
  valueSystem: string;
  reference: number;
  referenceSystem: string;
  ratio: number;
  unit: string;
}

/** One target row. */
export interface TargetRow {
  /** Stable key (the same row across runs). */
  id: string;
  /** What the row requires, in words. */
  target: string;
  /** The ratio the row must reach. */
  line: number;
  /** `atLeast`: met when the ratio ≥ the line (throughput); `atMost`: met when ≤ (latency, cost). */
  direction: 'atLeast' | 'atMost';
  measure(lookup: MedianLookup): RowMeasure | undefined;
}

/** A row's verdict. */
export type Verdict = 'met' | 'level' | 'missed';

/** How near the line (relative) a ratio is reported as level rather than met or missed. */
export const LEVEL_TOLERANCE = 0.03;

/**
 * The verdict of a ratio against a row's line: level within ±3 % of the line (run-to-run noise on
 * this machine is larger than that, so neither side is claimed), else met or missed.
 */
export function verdict(ratio: number, line: number, direction: TargetRow['direction']): Verdict {
  // A small epsilon so that a ratio of exactly 1.03 against a line of 1 counts as level despite
  // floating-point rounding.
  if (Math.abs(ratio - line) <= LEVEL_TOLERANCE * line + 1e-9) return 'level';
  return (direction === 'atLeast' ? ratio >= line : ratio <= line) ? 'met' : 'missed';
}

/** The better (max or min) of several systems' medians, with its system. */
function best(
  lookup: MedianLookup,
  w: string,
  c: string | readonly string[],
  metric: string,
  systems: readonly string[],
  better: 'higher' | 'lower',
): { value: number; system: string } | undefined {
  let out: { value: number; system: string } | undefined;
  // Several case names: the first one measured (a case renamed between runs).
  const cases = typeof c === 'string' ? [c] : c;
  for (const s of systems) {
    let v: number | undefined;
    for (const name of cases) {
      v = lookup(w, name, metric, s);
      if (v !== undefined) break;
    }
    if (v === undefined) continue;
    if (!out || (better === 'higher' ? v > out.value : v < out.value)) out = { value: v, system: s };
  }
  return out;
}

function pair(
  a: { value: number; system: string } | undefined,
  b: { value: number; system: string } | undefined,
  unit: string,
): RowMeasure | undefined {
  if (!a || !b || b.value === 0) return undefined;
  return {
    value: a.value,
    valueSystem: a.system,
    reference: b.value,
    referenceSystem: b.system,
    ratio: a.value / b.value,
    unit,
  };
}

/** TaskQ's configurations and graphile-worker's: for throughput the better one of each counts. */
export const TASKQ_CONFIGS = ['taskq', 'taskq-tuned'] as const;
export const GRAPHILE_CONFIGS = ['graphile', 'graphile-tuned', 'graphile-018-tuned'] as const;

/** The processing cases of the throughput rows, with a short label for tables and charts. */
export const PROCESSING_ROWS = [
  { case: '1 process, c=10', label: '1p c=10' },
  { case: '1 process, c=50', label: '1p c=50' },
  { case: '2 processes, c=10 each', label: '2p c=10' },
  { case: '4 processes, c=10 each', label: '4p c=10' },
  { case: '2 processes, c=50 each', label: '2p c=50' },
  { case: '4 processes, c=50 each', label: '4p c=50' },
  { case: '2 schemas × 2 processes, c=10 each', label: '2×2p c=10' },
  { case: '2 schemas × 2 processes, c=50 each', label: '2×2p c=50' },
] as const;

/**
 * The target rows. `peers` are the systems whose load TaskQ was offered (one pair of latency rows
 * each); pass every system of the runs, TaskQ's own configurations are left out.
 */
export function targetRows(peers: readonly string[]): TargetRow[] {
  const rows: TargetRow[] = [];
  for (const p of PROCESSING_ROWS) {
    rows.push({
      id: `processing ${p.label}`,
      target: `processing, ${p.case}: TaskQ ≥ 1.0× graphile-worker's best config`,
      line: 1,
      direction: 'atLeast',
      measure: (l) =>
        pair(
          best(l, 'processing', p.case, 'jobs/s', TASKQ_CONFIGS, 'higher'),
          best(l, 'processing', p.case, 'jobs/s', GRAPHILE_CONFIGS, 'higher'),
          'jobs/s',
        ),
    });
  }
  rows.push({
    id: 'processing 4p vs 1p',
    target: "processing: TaskQ's 4 processes ≥ 1.0× its 1 process (c=10 each)",
    line: 1,
    direction: 'atLeast',
    measure: (l) =>
      pair(
        best(l, 'processing', PROCESSING_ROWS[3].case, 'jobs/s', TASKQ_CONFIGS, 'higher'),
        best(l, 'processing', PROCESSING_ROWS[0].case, 'jobs/s', TASKQ_CONFIGS, 'higher'),
        'jobs/s',
      ),
  });
  for (const [id, target, c] of [
    ['enqueue bulk', 'bulk enqueue: TaskQ enqueueBatch ≥ 1.0× graphile-worker addJobs', ENQUEUE_CASES.bulk],
    ['enqueue single', 'single enqueue: TaskQ ≥ 1.0× graphile-worker addJob', ENQUEUE_CASES.single],
  ] as const) {
    rows.push({
      id,
      target,
      line: 1,
      direction: 'atLeast',
      measure: (l) =>
        pair(
          best(l, 'enqueue', c, 'jobs/s', ['taskq'], 'higher'),
          best(l, 'enqueue', c, 'jobs/s', GRAPHILE_CONFIGS, 'higher'),
          'jobs/s',
        ),
    });
  }
  rows.push({
    id: 'latency idle p50',
    target: "idle p50 latency: TaskQ ≤ graphile-worker's best config",
    line: 1,
    direction: 'atMost',
    measure: (l) =>
      pair(
        best(l, 'latency', LATENCY_CASES.idle, 'p50 (ms)', ['taskq'], 'lower'),
        best(l, 'latency', LATENCY_CASES.idle, 'p50 (ms)', GRAPHILE_CONFIGS, 'lower'),
        'ms',
      ),
  });
  for (const peer of peers.filter(isPeer)) {
    // Runs made before every peer's load was offered named graphile defaults' case differently.
    const cases =
      peer === 'graphile' ? [peerLoadCase(peer), LATENCY_CASES.legacyPeerLoad] : [peerLoadCase(peer)];
    for (const p of [50, 99]) {
      rows.push({
        id: `latency same load ${peer} p${p}`,
        target: `p${p} latency at ${peer}'s 50 % load: TaskQ ≤ ${peer}'s`,
        line: 1,
        direction: 'atMost',
        measure: (l) =>
          pair(
            best(l, 'latency', cases, `p${p} (ms)`, [PEER_LOAD_SYSTEM], 'lower'),
            best(l, 'latency', LATENCY_CASES.load, `p${p} (ms)`, [peer], 'lower'),
            'ms',
          ),
      });
    }
  }
  for (const [name, m] of [
    ['drain', SCALE_METRICS.drain],
    ['dispatch statement', SCALE_METRICS.dispatch],
  ] as const) {
    rows.push({
      id: `scale ${name}`,
      target: `scale, ${name}: TaskQ's cost per job at 1M rows ≤ 1.5× at 10k rows`,
      line: 1.5,
      direction: 'atMost',
      measure: (l) =>
        pair(
          best(l, 'scale', sizeLabel(1_000_000), m.metric, ['taskq'], 'lower'),
          best(l, 'scale', sizeLabel(10_000), m.metric, ['taskq'], 'lower'),
          'ms/job',
        ),
    });
  }
  return rows;
}

/** Compact figure for a measure's text: 3 significant figures, thousands separated. */
export function fig(v: number): string {
  if (!Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  if (a >= 100) return Math.round(v).toLocaleString('en-US');
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toFixed(3);
}

/** "a vs b unit = r× (system vs system)": one run's measure in words. */
export function describeMeasure(m: RowMeasure): string {
  return `${fig(m.value)} vs ${fig(m.reference)} ${m.unit} = ${m.ratio.toFixed(2)}× (${m.valueSystem} vs ${m.referenceSystem})`;
}
