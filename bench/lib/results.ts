/**
 * Collected measurements: one series of per-round values per (workload, case, metric, system), plus
 * failures and placeholders. Rendered to JSON and markdown by `report.ts`.
 */
import { summarize, type Summary } from './stats.js';

export interface Series {
  workload: string;
  case: string;
  metric: string;
  unit: string;
  /** Direction of "better", for ratios. */
  better: 'higher' | 'lower';
  ratio?: boolean;
  system: string;
  values: number[];
  notes: string[];
  errors: string[];
}

export interface SeriesSummary extends Series {
  summary: Summary;
}

export interface MetricSpec {
  metric: string;
  unit: string;
  better: 'higher' | 'lower';
  /** Show a "TaskQ ÷ this" column for this metric in the report. */
  ratio?: boolean;
}

export class Results {
  readonly series: Series[] = [];
  /** Workloads that were deliberately not measured, with the reason. */
  readonly placeholders: { workload: string; case: string; text: string }[] = [];

  private get(workload: string, caseName: string, m: MetricSpec, system: string): Series {
    let s = this.series.find(
      (x) => x.workload === workload && x.case === caseName && x.metric === m.metric && x.system === system,
    );
    if (!s) {
      s = { workload, case: caseName, ...m, system, values: [], notes: [], errors: [] };
      this.series.push(s);
    }
    return s;
  }

  record(
    workload: string,
    caseName: string,
    m: MetricSpec,
    system: string,
    value: number,
    note?: string,
  ): void {
    const s = this.get(workload, caseName, m, system);
    s.values.push(value);
    if (note && !s.notes.includes(note)) s.notes.push(note);
  }

  note(workload: string, caseName: string, m: MetricSpec, system: string, note: string): void {
    const s = this.get(workload, caseName, m, system);
    if (!s.notes.includes(note)) s.notes.push(note);
  }

  fail(workload: string, caseName: string, m: MetricSpec, system: string, error: string): void {
    const s = this.get(workload, caseName, m, system);
    if (!s.errors.includes(error)) s.errors.push(error);
  }

  placeholder(workload: string, caseName: string, text: string): void {
    this.placeholders.push({ workload, case: caseName, text });
  }

  summaries(): SeriesSummary[] {
    return this.series.map((s) => ({ ...s, summary: summarize(s.values) }));
  }

  /** Median of one series, if measured. */
  median(workload: string, caseName: string, metric: string, system: string): number | undefined {
    const s = this.series.find(
      (x) => x.workload === workload && x.case === caseName && x.metric === metric && x.system === system,
    );
    if (!s || s.values.length === 0) return undefined;
    const m = summarize(s.values).median;
    return Number.isFinite(m) ? m : undefined;
  }
}
