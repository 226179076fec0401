// The multi-run summary (bench/lib/summary.ts, target-rows.ts): each target row's ratio per run,
// the median over runs, the verdict with its ±3 % level band, and the medians table, on hand-made
// run results (no database).
import { describe, expect, it } from 'vitest';

import type { Report } from '../../bench/lib/report.js';
import type { SeriesSummary } from '../../bench/lib/results.js';
import { summarize } from '../../bench/lib/stats.js';
import {
  chartSpecs,
  renderSummaryMarkdown,
  summarizeCells,
  summarizeTargets,
  systemsOf,
} from '../../bench/lib/summary.js';
import { LEVEL_TOLERANCE, verdict } from '../../bench/lib/target-rows.js';

/** One series with the given round values. */
function series(
  workload: string,
  c: string,
  metric: string,
  system: string,
  values: number[],
): SeriesSummary {
  return {
    workload,
    case: c,
    metric,
    unit: '',
    better: 'higher',
    system,
    values,
    notes: [],
    errors: [],
    summary: summarize(values),
  };
}

/** A run whose processing c=10 medians are `taskq` and `graphile` jobs/s, plus what `extra` adds. */
function run(taskq: number, graphile: number, extra: SeriesSummary[] = [], quick = false): Report {
  return {
    env: {
      date: '2026-12-06T10:00:00.000Z',
      cpu: 'Test CPU',
      cores: 2,
      memoryGiB: 24,
      node: '20.20.0',
      postgres: 'PostgreSQL 15.20',
      redis: '7.0.15',
      commit: 'abc1234',
      taskqFrom: 'dist/',
      loadAvg: { min: 1, median: 1.5, max: 2, samples: [] },
    },
    options: {
      quick,
      rounds: 3,
      only: null,
      systems: [],
      cpuProfDir: null,
      loadRate: null,
      processingJobs: null,
      processingWarmup: 0,
    },
    systems: [
      { id: 'taskq', title: 'TaskQ defaults', pkg: 'taskq', settings: 'defaults' },
      { id: 'graphile', title: 'graphile defaults', pkg: 'graphile-worker', settings: 'defaults' },
    ],
    unavailable: [],
    // Three rounds each, so that the run's figure is the median of its rounds.
    series: [
      series('processing', '1 process, c=10', 'jobs/s', 'taskq', [taskq * 0.9, taskq, taskq * 1.2]),
      series('processing', '1 process, c=10', 'jobs/s', 'graphile', [
        graphile,
        graphile * 0.5,
        graphile * 1.1,
      ]),
      ...extra,
    ],
    placeholders: [],
    targets: [],
    durationS: 1,
  };
}

const C10 = 'processing 1p c=10';

describe('verdict', () => {
  it('is level within ±3 % of the line, and met or missed beyond it', () => {
    expect(LEVEL_TOLERANCE).toBe(0.03);
    expect(verdict(1.03, 1, 'atLeast')).toBe('level');
    expect(verdict(0.97, 1, 'atLeast')).toBe('level');
    expect(verdict(1.031, 1, 'atLeast')).toBe('met');
    expect(verdict(0.969, 1, 'atLeast')).toBe('missed');
    expect(verdict(0.9, 1, 'atMost')).toBe('met');
    expect(verdict(1.1, 1, 'atMost')).toBe('missed');
    // The band is relative to the line: ±4.5 % of 1.5.
    expect(verdict(1.54, 1.5, 'atMost')).toBe('level');
    expect(verdict(1.56, 1.5, 'atMost')).toBe('missed');
  });
});

describe('summarizeTargets', () => {
  it("takes each run's ratio of medians over rounds, and the median of the ratios over runs", () => {
    const runs = [run(1100, 1000), run(900, 1000), run(1500, 1000)];
    const row = summarizeTargets(runs).find((r) => r.row.id === C10)!;
    expect(row.perRun.map((m) => m?.ratio)).toEqual([1.1, 0.9, 1.5]);
    expect(row.median).toBeCloseTo(1.1);
    expect(row.runs).toBe(3);
    expect(row.verdict).toBe('met');
  });

  it('reports a median within 3 % of the line as level, below it as missed', () => {
    expect(
      summarizeTargets([run(980, 1000), run(1020, 1000), run(1000, 1000)]).find((r) => r.row.id === C10)!
        .verdict,
    ).toBe('level');
    expect(
      summarizeTargets([run(800, 1000), run(1200, 1000), run(900, 1000)]).find((r) => r.row.id === C10)!
        .verdict,
    ).toBe('missed');
  });

  it("counts the better of TaskQ's and of graphile-worker's configurations", () => {
    const r = run(1000, 1000, [
      series('processing', '1 process, c=10', 'jobs/s', 'taskq-tuned', [1200]),
      series('processing', '1 process, c=10', 'jobs/s', 'graphile-tuned', [1500]),
    ]);
    const m = summarizeTargets([r]).find((x) => x.row.id === C10)!.perRun[0]!;
    expect(m.valueSystem).toBe('taskq-tuned');
    expect(m.referenceSystem).toBe('graphile-tuned');
    expect(m.ratio).toBeCloseTo(0.8);
  });

  it('leaves a run that did not measure a row out of its median, and says when no run did', () => {
    const partial = run(1000, 1000);
    partial.series = partial.series.filter((s) => s.system !== 'graphile');
    const row = summarizeTargets([run(1200, 1000), partial, run(1400, 1000)]).find((r) => r.row.id === C10)!;
    expect(row.perRun[1]).toBeUndefined();
    expect(row.runs).toBe(2);
    expect(row.median).toBeCloseTo(1.3);
    const none = summarizeTargets([partial]).find((r) => r.row.id === C10)!;
    expect(none.verdict).toBe('not measured');
  });

  it("compares TaskQ at each peer's load with that peer's own p50 and p99", () => {
    const lat = (c: string, system: string, p50: number, p99: number): SeriesSummary[] => [
      series('latency', c, 'p50 (ms)', system, [p50]),
      series('latency', c, 'p99 (ms)', system, [p99]),
    ];
    const r = run(1000, 1000, [
      ...lat('under 50 % load', 'bullmq-redis', 4, 20),
      ...lat("at bullmq-redis's 50 % load", 'taskq', 2, 30),
      ...lat('under 50 % load', 'graphile', 3, 10),
      // A run made before every peer's load was offered: graphile defaults' case had another name.
      ...lat("at graphile-worker's 50 % load", 'taskq', 1.5, 10.2),
    ]);
    const rows = summarizeTargets([r]);
    const get = (id: string) => rows.find((x) => x.row.id === id)!;
    expect(get('latency same load bullmq-redis p50').verdict).toBe('met');
    expect(get('latency same load bullmq-redis p99').verdict).toBe('missed');
    expect(get('latency same load graphile p50').median).toBeCloseTo(0.5);
    expect(get('latency same load graphile p99').verdict).toBe('level');
    // No rows for TaskQ's own configurations as peers.
    expect(rows.some((x) => x.row.id.includes('same load taskq'))).toBe(false);
  });
});

describe('summarizeCells', () => {
  it('takes the median over runs of every series, marking partial ones', () => {
    const runs = [run(1000, 100), run(3000, 300), run(2000, 200)];
    runs[1]!.series[1]!.notes.push('partial: capped');
    const cells = summarizeCells(runs);
    const tq = cells.find((c) => c.system === 'taskq')!;
    expect(tq.perRun).toEqual([1000, 3000, 2000]);
    expect(tq.median).toBe(2000);
    expect(cells.find((c) => c.system === 'graphile')!.partial).toBe(true);
  });
});

describe('renderSummaryMarkdown', () => {
  it("shows the hardware, the reproduction, each run's ratio, the verdicts and the charts", () => {
    const runs = [run(1100, 1000), run(900, 1000), run(1500, 1000)];
    const titles = new Map([['taskq', 'TaskQ defaults']]);
    const specs = chartSpecs(summarizeCells(runs), systemsOf(runs), titles);
    expect(specs.map((s) => s.file)).toEqual(['processing-throughput.svg']);
    const md = renderSummaryMarkdown({
      runs,
      names: ['a', 'b', 'c'],
      charts: { specs, relDir: 'performance' },
    });
    expect(md).toContain('Test CPU');
    expect(md).toContain('npx tsx bench/summarize.ts');
    expect(md).toMatch(/\| 1\.10× \| 0\.90× \| 1\.50× \| \*\*1\.10×\*\* \| met \|/);
    expect(md).toContain('<img src="performance/processing-throughput.svg"');
    expect(md).not.toContain('indicative only');
  });

  it('keeps one colour per system across charts and leaves out cases no run measured', () => {
    const runs = [
      run(1000, 100, [
        series('processing', '1 process, c=10', 'WAL (kB/job)', 'graphile', [0.5]),
        series('processing', '2 processes, c=10 each', 'jobs/s', 'graphile', [90]),
      ]),
    ];
    const specs = chartSpecs(summarizeCells(runs), systemsOf(runs), new Map());
    const throughput = specs.find((s) => s.file === 'processing-throughput.svg')!.chart;
    expect(throughput.groups).toEqual(['1p c=10', '2p c=10']);
    const wal = specs.find((s) => s.file === 'wal.svg')!.chart;
    // Only graphile measured WAL: its bar keeps graphile's colour from the throughput chart.
    expect(wal.series.map((s) => s.name)).toEqual(['graphile']);
    expect(wal.series[0]!.color).toBe(throughput.series.find((s) => s.name === 'graphile')!.color);
    expect(wal.series[0]!.color).not.toBe(throughput.series.find((s) => s.name === 'taskq')!.color);
  });

  it('says when fewer than three of the runs are full runs', () => {
    const md = renderSummaryMarkdown({ runs: [run(1, 1, [], true)], names: ['q'], charts: null });
    expect(md).toContain('indicative only');
  });
});
