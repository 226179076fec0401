/**
 * The time series of `bench/mixed-load.ts` and its verdict: does latency or memory grow over the
 * run? The verdict compares a window right after the warm-up with the run's end (for 10 minutes:
 * minutes 2–4 against the last 2 minutes), each window summarised by the median of its intervals,
 * so that one slow interval (a checkpoint, a prune) does not decide it.
 */
import { median } from './stats.js';

/** One sampling interval of the run. */
export interface MixedSample {
  /** Seconds since the load started, at the interval's end. */
  tSec: number;
  /** Jobs the producer offered (enqueue calls issued) per second. */
  offeredPerSec: number;
  /** Jobs whose handler returned, per second (all worker processes). */
  completedPerSec: number;
  /** Attempts whose handler threw, per second. */
  thrownPerSec: number;
  /** Enqueue → handler start of first attempts that started in the interval (ms); null without any. */
  latencyP50Ms: number | null;
  latencyP99Ms: number | null;
  /** The same for the high-priority jobs only. */
  highP50Ms: number | null;
  highP99Ms: number | null;
  /** First attempts that started in the interval. */
  latencyN: number;
  /** Duration of the enqueue calls (single and batch) that started in the interval (ms). */
  enqueueCallP50Ms: number | null;
  enqueueCallP99Ms: number | null;
  /** Per worker process (bytes): RSS at the interval's end; heap used, its lowest report in the interval. */
  rssBytes: number[];
  heapUsedBytes: number[];
  /** The producer's own RSS (bytes). */
  producerRssBytes: number;
  /** CPU over the interval, in % of one core: each worker process, and the producer. */
  workerCpuPercent: (number | null)[];
  producerCpuPercent: number;
  /** CPU of the Postgres server's processes over the interval, in % of one core; null when unreadable. */
  pgCpuPercent: number | null;
  /** The machine's busy share over the interval (%), null when unreadable. */
  machineBusyPercent: number | null;
  /** Jobs pending (the backlog), scheduled (retries waiting for their backoff) and running. */
  pending: number;
  scheduled: number;
  running: number;
  /** `pg_total_relation_size` of the jobs table (heap, indexes, TOAST). */
  jobsTableBytes: number;
  /** Jobs the producer was behind its schedule at the interval's end (its enqueue calls waited). */
  producerLag: number;
}

/** A span of the run, in seconds since the load started: samples with from < tSec ≤ to. */
export interface VerdictWindow {
  fromSec: number;
  toSec: number;
}

/** How much the end window may exceed the early one and still count as "no growth". */
export interface Tolerance {
  /** Latency p99: relative (%) plus an absolute slack (ms), for readings of a few milliseconds. */
  latencyPercent: number;
  latencySlackMs: number;
  /**
   * RSS and heap used of each process: relative (%) plus an absolute slack (MB), for small heaps,
   * where a few megabytes of caches or pool buffers filled late in the run are not a trend.
   */
  memoryPercent: number;
  memorySlackMb: number;
}

/** The default tolerance (stated in the README and printed with each verdict). */
export const DEFAULT_TOLERANCE: Tolerance = {
  latencyPercent: 25,
  latencySlackMs: 1,
  memoryPercent: 10,
  memorySlackMb: 8,
};

/**
 * The windows compared: the second fifth of the run (after the warm-up) and its last fifth. For
 * 10 minutes these are minutes 2–4 and 8–10.
 */
export function verdictWindows(totalSec: number): { early: VerdictWindow; late: VerdictWindow } {
  return {
    early: { fromSec: totalSec * 0.2, toSec: totalSec * 0.4 },
    late: { fromSec: totalSec * 0.8, toSec: totalSec },
  };
}

/** One compared figure. */
export interface VerdictLine {
  metric: string;
  unit: string;
  early: number;
  late: number;
  /** Largest late value that counts as no growth. */
  limit: number;
  growth: boolean;
}

/** The verdict of a run. */
export interface Verdict {
  early: VerdictWindow;
  late: VerdictWindow;
  tolerance: Tolerance;
  lines: VerdictLine[];
  /** True when any line grew, or a window had no readings (then nothing can be said). */
  growth: boolean;
  /** Why a verdict could not be reached, when it could not. */
  missing: string[];
  /**
   * The producer's largest lag behind its schedule in the late window (jobs), and whether that
   * stayed within one second of the offered rate: past it the figures are of a lower load than
   * the one offered, and the machine did not sustain the rate.
   */
  lateLag: number;
  keptUp: boolean;
}

function windowMedian(
  samples: readonly MixedSample[],
  w: VerdictWindow,
  pick: (s: MixedSample) => number | null,
): number | null {
  const values = samples
    .filter((s) => s.tSec > w.fromSec && s.tSec <= w.toSec + 1e-9)
    .map(pick)
    .filter((v): v is number => v !== null && Number.isFinite(v));
  return values.length ? median(values) : null;
}

/** Compares latency p99 and each process's RSS and heap between the two windows. */
export function mixedVerdict(
  samples: readonly MixedSample[],
  totalSec: number,
  rate: number,
  tolerance: Tolerance = DEFAULT_TOLERANCE,
): Verdict {
  const { early, late } = verdictWindows(totalSec);
  const lines: VerdictLine[] = [];
  const missing: string[] = [];
  const compare = (
    metric: string,
    unit: string,
    pick: (s: MixedSample) => number | null,
    limitOf: (e: number) => number,
  ) => {
    const e = windowMedian(samples, early, pick);
    const l = windowMedian(samples, late, pick);
    if (e === null || l === null) {
      missing.push(metric);
      return;
    }
    const limit = limitOf(e);
    lines.push({ metric, unit, early: e, late: l, limit, growth: l > limit });
  };
  compare(
    'latency p99',
    'ms',
    (s) => s.latencyP99Ms,
    (e) => e * (1 + tolerance.latencyPercent / 100) + tolerance.latencySlackMs,
  );
  const processes = Math.max(0, ...samples.map((s) => s.rssBytes.length));
  const mem = (e: number) => e * (1 + tolerance.memoryPercent / 100) + tolerance.memorySlackMb;
  for (let p = 0; p < processes; p++) {
    compare(`worker ${p + 1} RSS`, 'MB', (s) => (s.rssBytes[p] ?? 0) / 2 ** 20 || null, mem);
    compare(`worker ${p + 1} heap used`, 'MB', (s) => (s.heapUsedBytes[p] ?? 0) / 2 ** 20 || null, mem);
  }
  const lateLag = Math.max(
    0,
    ...samples.filter((s) => s.tSec > late.fromSec && s.tSec <= late.toSec + 1e-9).map((s) => s.producerLag),
  );
  return {
    early,
    late,
    tolerance,
    lines,
    growth: missing.length > 0 || lines.some((l) => l.growth),
    missing,
    lateLag,
    keptUp: lateLag <= rate,
  };
}

/** The verdict as printable lines: one per figure, then the overall one. */
export function formatVerdict(v: Verdict): string[] {
  const span = (w: VerdictWindow) => `${fmtMin(w.fromSec)}–${fmtMin(w.toSec)} min`;
  const out = v.lines.map((l) => {
    const change =
      l.early > 0
        ? `${l.late >= l.early ? '+' : ''}${(((l.late - l.early) / l.early) * 100).toFixed(0)} %`
        : 'n/a';
    return `verdict ${l.metric}: ${span(v.early)} ${l.early.toFixed(2)} ${l.unit}, ${span(v.late)} ${l.late.toFixed(2)} ${l.unit} (${change}, limit ${l.limit.toFixed(2)}): ${l.growth ? 'growth' : 'no growth'}`;
  });
  const t = v.tolerance;
  const tol = `tolerance: latency p99 +${t.latencyPercent} % +${t.latencySlackMs} ms, memory +${t.memoryPercent} % +${t.memorySlackMb} MB; window medians of the interval readings`;
  if (v.missing.length) out.push(`verdict: no reading in a window for ${v.missing.join(', ')} (run longer)`);
  out.push(
    v.keptUp
      ? `verdict load: the producer kept to its schedule (at most ${v.lateLag} jobs behind in ${span(v.late)})`
      : `verdict load: fell behind, ${v.lateLag} jobs behind schedule in ${span(v.late)} (more than 1 s of the rate): the rate was not sustained`,
  );
  out.push(
    `verdict: ${v.growth ? 'growth' : 'no growth'}${v.keptUp ? '' : ', at a lower rate than offered'} (${tol})`,
  );
  return out;
}

function fmtMin(sec: number): string {
  return String(Number((sec / 60).toFixed(2)));
}
