/** Renders the results as markdown tables (and the target checklist) and as JSON. */
import type { SystemAdapter } from '../systems/types.js';
import type { BenchOptions } from './context.js';
import type { Results, SeriesSummary } from './results.js';

export interface Environment {
  date: string;
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  postgres: string;
  redis: string;
  commit: string;
  /** Which TaskQ code ran: its compiled package (`dist/`, the default) or its sources through tsx. */
  taskqFrom: string;
  /** 1-minute load average sampled every 10 s during the run (other work on the machine shows here). */
  loadAvg: { min: number; median: number; max: number; samples: number[] };
}

export interface TargetCheck {
  target: string;
  measured: string;
  /** Level: within ±3 % of the line (see target-rows.ts). */
  status: 'met' | 'level' | 'missed' | 'not measured';
}

export interface Report {
  env: Environment;
  options: BenchOptions;
  systems: { id: string; title: string; pkg: string; settings: string }[];
  unavailable: { id: string; reason: string }[];
  series: SeriesSummary[];
  placeholders: Results['placeholders'];
  targets: TargetCheck[];
  durationS: number;
}

const WORKLOAD_TITLES: Record<string, string> = {
  enqueue: 'Enqueue',
  processing: 'Processing no-op jobs',
  latency: 'Enqueue → handler-start latency (1 worker process, c=10)',
  'latency-cpu':
    "CPU during the latency workload's loaded phases (after the warm-up; the load generator is the harness process making the enqueue calls)",
  scale: 'Scale: cost per job with a large jobs table (half pending backlog, half terminal)',
  memory: 'Memory of a worker process',
  'taskq-features': 'TaskQ-only features (1 worker process, c=10)',
  'features: cron': 'Features: cron, every second (1 worker process, c=10)',
  'features: cron catch-up': 'Features: cron catch-up after missed slots (1 worker process, c=10)',
  'features: batch fan-out and finalize': 'Features: batch fan-out and finalize (1 worker process, c=10)',
  'features: sub-jobs': 'Features: sub-jobs enqueued from handlers (1 worker process, c=10)',
  'features: retries with backoff': 'Features: retries with backoff (1 worker process, c=10)',
  'features: rate-limited actor': 'Features: rate-limited actor (1 worker process, c=10)',
};

export function fmt(v: number | undefined): string {
  if (v === undefined || !Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  if (a >= 1000) return Math.round(v).toLocaleString('en-US');
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toFixed(3);
}

function ratio(a: number | undefined, b: number | undefined): string {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return '–';
  return `${(a / b).toFixed(2)}×`;
}

/** Names of the TaskQ-only configurations (they are not in `systems`: no peer runs them). */
const FEATURE_TITLES: Record<string, string> = {
  'taskq-rl-open': 'TaskQ, Redis token bucket (not binding)',
  'taskq-rl-binding': 'TaskQ, Redis token bucket 500/s, burst 50',
  'taskq-reservation': 'TaskQ, keyed reservation (10 keys × 1 slot)',
};

export function renderMarkdown(r: Report): string {
  const out: string[] = [];
  const titles = new Map([
    ...Object.entries(FEATURE_TITLES),
    ...r.systems.map((s) => [s.id, s.title] as const),
  ]);
  out.push(`# TaskQ benchmark results (${r.options.quick ? 'quick' : 'full'} run)`);
  out.push('');
  out.push(
    `${r.env.date} · ${r.env.cpu}, ${r.env.cores} cores, ${r.env.memoryGiB} GiB · Node ${r.env.node} · ${r.env.postgres} · Redis ${r.env.redis} · TaskQ at ${r.env.commit}, run from ${r.env.taskqFrom} · 1-min load average during the run: median ${r.env.loadAvg.median.toFixed(1)}, min ${r.env.loadAvg.min.toFixed(1)}, max ${r.env.loadAvg.max.toFixed(1)} (2 cores; above ~2 other work competed with the benchmark)`,
  );
  out.push('');
  out.push(
    `Rounds: ${r.options.rounds} per measurement, systems alternating in rotated order. ` +
      `Cells: median (min–max) over rounds. "TaskQ ÷ this" divides the median of TaskQ with its defaults by the row's median: ` +
      `for throughput above 1× favours TaskQ, for latency, ms/job and MB below 1× does. Run took ${Math.round(r.durationS)} s.`,
  );
  const summary = summaryTable(r, titles);
  if (summary.length) out.push('', '## Summary (medians)', '', ...summary);
  if (r.unavailable.length) {
    out.push('');
    out.push('Unavailable systems (not measured):');
    for (const u of r.unavailable) out.push(`- ${u.id}: ${u.reason}`);
  }
  const workloads = [
    ...new Set([...r.series.map((s) => s.workload), ...r.placeholders.map((p) => p.workload)]),
  ];
  for (const w of workloads) {
    out.push('');
    out.push(`## ${WORKLOAD_TITLES[w] ?? w}`);
    const rows = r.series.filter((s) => s.workload === w);
    if (rows.length) out.push('', ...workloadTable(rows, titles));
    const ph = r.placeholders.filter((p) => p.workload === w);
    if (ph.length) {
      out.push('');
      for (const p of ph) out.push(`- **${p.case}**: ${p.text}`);
    }
  }
  out.push('');
  out.push('## Targets');
  out.push('');
  out.push('| target | measured | status |');
  out.push('| --- | --- | --- |');
  for (const t of r.targets) out.push(`| ${t.target} | ${t.measured} | ${t.status} |`);
  out.push('');
  out.push('## Settings of each system');
  out.push('');
  for (const s of r.systems) {
    out.push(`- **${s.title}** (\`${s.id}\`, ${s.pkg}): ${s.settings}`);
  }
  out.push('');
  return out.join('\n');
}

const SUMMARY_ROWS: [label: string, workload: string, caseName: string, metric: string][] = [
  ['enqueue, single (jobs/s)', 'enqueue', 'single (one call per job)', 'jobs/s'],
  ['enqueue, bulk 1,000 (jobs/s)', 'enqueue', 'bulk (1,000 per call)', 'jobs/s'],
  ['process, 1 × c=10 (jobs/s)', 'processing', '1 process, c=10', 'jobs/s'],
  ['process, 1 × c=50 (jobs/s)', 'processing', '1 process, c=50', 'jobs/s'],
  ['process, 2 × c=10 (jobs/s)', 'processing', '2 processes, c=10 each', 'jobs/s'],
  ['process, 4 × c=10 (jobs/s)', 'processing', '4 processes, c=10 each', 'jobs/s'],
  ['process, 2 × c=50 (jobs/s)', 'processing', '2 processes, c=50 each', 'jobs/s'],
  ['process, 4 × c=50 (jobs/s)', 'processing', '4 processes, c=50 each', 'jobs/s'],
  ['process, 2 schemas × 2 × c=10 (jobs/s)', 'processing', '2 schemas × 2 processes, c=10 each', 'jobs/s'],
  ['process, 2 schemas × 2 × c=50 (jobs/s)', 'processing', '2 schemas × 2 processes, c=50 each', 'jobs/s'],
  ['WAL per job, 1 × c=10 (kB)', 'processing', '1 process, c=10', 'WAL (kB/job)'],
  ['worker CPU per job, 1 × c=10 (µs)', 'processing', '1 process, c=10', 'worker CPU (µs/job)'],
  ['Postgres CPU per job, 1 × c=10 (µs)', 'processing', '1 process, c=10', 'Postgres CPU (µs/job)'],
  ['latency idle, p50 (ms)', 'latency', 'idle worker', 'p50 (ms)'],
  ['latency idle, p99 (ms)', 'latency', 'idle worker', 'p99 (ms)'],
  ['latency at 50 % load, p50 (ms)', 'latency', 'under 50 % load', 'p50 (ms)'],
  ['latency at 50 % load, p99 (ms)', 'latency', 'under 50 % load', 'p99 (ms)'],
  ['enqueue call at 50 % load, p99 (ms)', 'latency', 'under 50 % load', 'enqueue call p99 (ms)'],
  [
    'call return → start at 50 % load, p99 (ms)',
    'latency',
    'under 50 % load',
    'call return → start p99 (ms)',
  ],
  ['drain ms/job, 10k rows', 'scale', '10k rows', 'drain, worker c=10 (ms/job)'],
  ['drain ms/job, 1M rows', 'scale', '1M rows', 'drain, worker c=10 (ms/job)'],
  ['peak RSS, c=50 (MB)', 'memory', '100k jobs, 1 process, c=50', 'peak RSS (MB)'],
];

/** Key medians, one column per system (partial runs marked *). */
function summaryTable(r: Report, titles: Map<string, string>): string[] {
  const systems = r.systems.map((s) => s.id);
  const rows: string[] = [];
  for (const [label, w, c, m] of SUMMARY_ROWS) {
    const cells = systems.map((sys) => {
      const s = r.series.find((x) => x.workload === w && x.case === c && x.metric === m && x.system === sys);
      if (!s || s.summary.n === 0) return '–';
      return `${fmt(s.summary.median)}${s.notes.some((n) => n.startsWith('partial')) ? '*' : ''}`;
    });
    if (cells.some((x) => x !== '–')) rows.push(`| ${label} | ${cells.join(' | ')} |`);
  }
  if (rows.length === 0) return [];
  return [
    `| | ${systems.map((s) => titles.get(s) ?? s).join(' | ')} |`,
    `| --- | ${systems.map(() => '---:').join(' | ')} |`,
    ...rows,
    '',
    '\\* partial: the system could not finish within the time cap; the rate is over the capped window.',
  ];
}

/**
 * One row per (case, system); one column per metric with "median (min–max)"; a "TaskQ ÷ this"
 * column for each metric flagged `ratio` (TaskQ = the `taskq` defaults configuration).
 */
function workloadTable(rows: SeriesSummary[], titles: Map<string, string>): string[] {
  const metrics = [...new Set(rows.map((s) => s.metric))];
  const ratioMetrics = metrics.filter((m) => rows.find((s) => s.metric === m)?.ratio);
  const cases = [...new Set(rows.map((s) => s.case))];
  const systems = [...new Set(rows.map((s) => s.system))];
  const out: string[] = [];
  const rounds = Math.max(...rows.map((s) => s.summary.n));
  out.push(
    `| case | system | ${metrics.map((m) => `${m}${rounds > 1 ? ' median (min–max)' : ''}`).join(' | ')} | ${ratioMetrics
      .map((m) => `TaskQ ÷ this (${m.replace(/ \(.*\)$/, '')})`)
      .join(' | ')}${ratioMetrics.length ? ' | ' : ''}notes |`,
  );
  out.push(
    `| --- | --- | ${metrics.map(() => '---:').join(' | ')} | ${ratioMetrics.map(() => '---:').join(' | ')}${ratioMetrics.length ? ' | ' : ''}--- |`,
  );
  const find = (c: string, sys: string, m: string) =>
    rows.find((s) => s.case === c && s.system === sys && s.metric === m);
  for (const c of cases) {
    for (const sys of systems) {
      const own = rows.filter((s) => s.case === c && s.system === sys);
      if (own.length === 0) continue;
      const cells = metrics.map((m) => {
        const s = find(c, sys, m);
        if (!s || s.summary.n === 0) return '–';
        const v = s.summary;
        return v.n > 1 ? `**${fmt(v.median)}** (${fmt(v.min)}–${fmt(v.max)})` : `**${fmt(v.median)}**`;
      });
      const ratios = ratioMetrics.map((m) =>
        sys === 'taskq' ? '' : ratio(find(c, 'taskq', m)?.summary.median, find(c, sys, m)?.summary.median),
      );
      const notes = own.flatMap((s) => [...s.notes, ...s.errors.map((e) => `FAILED: ${e}`)]);
      out.push(
        `| ${c} | ${titles.get(sys) ?? sys} | ${cells.join(' | ')} | ${ratios.join(' | ')}${ratioMetrics.length ? ' | ' : ''}${[
          ...new Set(notes),
        ]
          .join('; ')
          .replace(/\|/g, '/')} |`,
      );
    }
  }
  return out;
}

export function describeSystems(adapters: SystemAdapter[]): Report['systems'] {
  return adapters.map((a) => ({
    id: a.id,
    title: a.title,
    pkg: a.pkg,
    settings: a.settings,
  }));
}
