/**
 * The performance issue's targets, checked against this run's medians (the rows are in
 * `target-rows.ts`, shared with `summary.ts`, which checks the median over several runs). A target
 * whose inputs were not measured says so; nothing is inferred.
 */
import type { TargetCheck } from './report.js';
import type { Results } from './results.js';
import { describeMeasure, targetRows, verdict } from './target-rows.js';

/** Every target row against one run's medians. */
export function checkTargets(results: Results): TargetCheck[] {
  const systems = [...new Set(results.series.map((s) => s.system))];
  return targetRows(systems).map((row) => {
    const m = row.measure((w, c, metric, s) => results.median(w, c, metric, s));
    if (!m) return { target: row.target, measured: 'not measured in this run', status: 'not measured' };
    return {
      target: row.target,
      measured: describeMeasure(m),
      status: verdict(m.ratio, row.line, row.direction),
    };
  });
}
