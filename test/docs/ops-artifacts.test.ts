import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { METRIC_CATALOG, prometheusName, type MetricSpec } from '../../src/obs/metrics/metric-catalog.js';

// The alert rules and the dashboard in docs/ops/ are only useful if every series they read is one
// TaskQ exports under that exact name and with those labels: a renamed instrument would leave an
// alert silently never firing. These tests hold both files to the metric catalog.

const RULES_PATH = fileURLToPath(new URL('../../docs/ops/prometheus-alerts.yml', import.meta.url));
const DASHBOARD_PATH = fileURLToPath(new URL('../../docs/ops/grafana-dashboard.json', import.meta.url));
const PROMTOOL = '/usr/bin/promtool';

/** Labels every scraped series may carry besides its attributes: Prometheus' target labels and the exporter's scope. */
const SCRAPE_LABELS = ['instance', 'job', 'otel_scope_name'];

/** A scraped name → the catalog entry it comes from (histograms: their `_bucket`, `_sum`, `_count`). */
const SERIES = new Map<string, MetricSpec>();
for (const spec of METRIC_CATALOG as readonly MetricSpec[]) {
  const name = prometheusName(spec);
  if (spec.kind === 'histogram') {
    for (const suffix of ['_bucket', '_sum', '_count']) SERIES.set(name + suffix, spec);
  } else {
    SERIES.set(name, spec);
  }
}

/** A Prometheus label name of an attribute key (dots and other characters become underscores). */
function labelName(attribute: string): string {
  return attribute.replace(/[^a-zA-Z0-9_]/g, '_');
}

/** The labels a series of `name` may carry. */
function labelsOf(name: string, spec: MetricSpec): Set<string> {
  const labels = new Set([...spec.attributes.map(labelName), ...SCRAPE_LABELS]);
  if (name.endsWith('_bucket') && spec.kind === 'histogram') labels.add('le');
  return labels;
}

/** PromQL words that look like metric names: keywords, set and binary operators, literals. */
const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'atan2',
  'inf',
  'nan',
]);

/** What one PromQL expression references. */
interface PromqlReferences {
  /** Every metric name, as written. */
  metrics: string[];
  /** Labels in `{...}` matchers, with the metric they select (null for a bare `{...}`). */
  matched: { label: string; metric: string | null }[];
  /** Labels in `by`, `without`, `on`, `ignoring`, `group_left` and `group_right` lists. */
  grouped: string[];
}

/**
 * The metric and label names `expr` references. A light lexer, not a PromQL parser: strings and
 * Grafana variables are dropped, matchers and grouping lists are read and removed, and every
 * identifier left that is not a function call or a keyword is a metric name. Anything it cannot
 * read in a matcher throws rather than being skipped.
 */
function promqlReferences(expr: string): PromqlReferences {
  let s = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\$\{[^}]*\}|\$\w+/g, '');
  const matched: PromqlReferences['matched'] = [];
  s = s.replace(/([a-zA-Z_:][\w:]*)?\s*\{([^}]*)\}/g, (_all, metric: string | undefined, body: string) => {
    for (const part of body.split(',')) {
      if (part.trim() === '') continue;
      const m = /^\s*([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)\s*""\s*$/.exec(part);
      if (!m) throw new Error(`unreadable matcher ${JSON.stringify(part)} in ${expr}`);
      matched.push({ label: m[1]!, metric: metric ?? null });
    }
    return metric ?? '';
  });
  const grouped: string[] = [];
  s = s.replace(
    /\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g,
    (_all, list: string) => {
      for (const label of list.split(',')) if (label.trim() !== '') grouped.push(label.trim());
      return ' ';
    },
  );
  s = s.replace(/\[[^\]]*\]/g, '');
  const metrics: string[] = [];
  for (const m of s.matchAll(/(?<![\w.:])([a-zA-Z_:][\w:]*)(?![\w:]|\s*\()/g)) {
    if (!KEYWORDS.has(m[1]!.toLowerCase())) metrics.push(m[1]!);
  }
  return { metrics, matched, grouped };
}

/**
 * What is wrong with `expr` against the catalog: unknown metric names, matcher labels the selected
 * metric does not carry, grouping labels none of the expression's metrics carry, and `extraLabels`
 * (legend or annotation templates) likewise. Empty when all is well.
 */
function catalogProblems(expr: string, extraLabels: readonly string[] = []): string[] {
  const refs = promqlReferences(expr);
  const problems: string[] = [];
  const available = new Set<string>();
  for (const metric of refs.metrics) {
    const spec = SERIES.get(metric);
    if (!spec) problems.push(`metric ${metric} is not in METRIC_CATALOG`);
    else for (const label of labelsOf(metric, spec)) available.add(label);
  }
  for (const { label, metric } of refs.matched) {
    if (metric !== null && !SERIES.has(metric)) continue; // reported above
    const allowed = metric === null ? available : labelsOf(metric, SERIES.get(metric)!);
    if (!allowed.has(label))
      problems.push(`label ${label} in a matcher of ${metric ?? '{...}'} is not one of its labels`);
  }
  for (const label of [...refs.grouped, ...extraLabels]) {
    if (!available.has(label))
      problems.push(`label ${label} is carried by none of ${refs.metrics.join(', ')}`);
  }
  return problems;
}

/** One rule of a rule file: its name, its expression, and its whole text (for annotations). */
interface Rule {
  name: string;
  expr: string;
  text: string;
}

/**
 * The rules of a Prometheus rule file. No YAML library is a dependency of TaskQ, so this reads the
 * subset the file is written in: `- alert:` / `- record:` entries, each with one `expr:` that is a
 * block scalar (`|`, `>`, with `-` or `+`) or a one-line plain scalar. Any other form of `expr`
 * throws, so an edit in another style fails here instead of going unchecked; promtool's own count
 * of the rules is compared with this one below.
 */
function parseRules(text: string): Rule[] {
  const lines = text.split('\n');
  const rules: { name: string; exprs: string[]; start: number; end: number }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const start = /^\s*- (?:alert|record):\s*(\S+)\s*$/.exec(line);
    if (start) {
      if (rules.length > 0) rules[rules.length - 1]!.end = i;
      rules.push({ name: start[1]!, exprs: [], start: i, end: lines.length });
      continue;
    }
    const key = /^(\s*)expr:\s*(.*)$/.exec(line);
    if (!key) continue;
    const rule = rules[rules.length - 1];
    if (!rule) throw new Error(`line ${i + 1}: expr outside a rule`);
    const indent = key[1]!.length;
    const value = key[2]!.trim();
    const body: string[] = [];
    if (/^[|>][-+]?$/.test(value)) {
      while (
        i + 1 < lines.length &&
        (lines[i + 1]!.trim() === '' || /^\s*/.exec(lines[i + 1]!)![0].length > indent)
      ) {
        body.push(lines[++i]!);
      }
    } else if (value === '' || /^["'&*!]/.test(value) || / #/.test(value)) {
      throw new Error(`line ${i + 1}: write expr as a block scalar (|) or a one-line plain scalar`);
    } else {
      const next = lines.slice(i + 1).find((l) => l.trim() !== '');
      if (next !== undefined && /^\s*/.exec(next)![0].length > indent) {
        throw new Error(`line ${i + 1}: a plain expr continued on the next line; use a block scalar (|)`);
      }
      body.push(value);
    }
    rule.exprs.push(body.join('\n').trim());
  }
  return rules.map((r) => {
    if (r.exprs.length !== 1) throw new Error(`rule ${r.name} has ${r.exprs.length} expr keys`);
    return { name: r.name, expr: r.exprs[0]!, text: lines.slice(r.start, r.end).join('\n') };
  });
}

/** Labels a Go template reads: `$labels.x` (alert annotations) or `{{x}}` (Grafana legends). */
function templateLabels(text: string, style: 'alert' | 'legend'): string[] {
  const re = style === 'alert' ? /\$labels\.(\w+)/g : /\{\{\s*(\w+)\s*\}\}/g;
  return [...text.matchAll(re)].map((m) => m[1]!);
}

const rulesText = readFileSync(RULES_PATH, 'utf8');

describe('the catalog check itself', () => {
  it('accepts catalog names and labels, histogram suffixes, functions, keywords and Grafana variables', () => {
    expect(
      catalogProblems(
        'histogram_quantile(0.99, sum by (le, taskq_actor) (rate(messaging_process_duration_bucket{messaging_destination_name=~"$queue"}[$__rate_interval]))) > 0.5 ' +
          'and on () sum(taskq_dispatch_duration_count offset 5m) > bool 1e3 unless absent(taskq_fleet_leaders)',
        ['taskq_actor'],
      ),
    ).toEqual([]);
  });

  it('reports unknown metrics, suffixes on non-histograms, and labels the metrics do not carry', () => {
    expect(catalogProblems('max by (queue) (taskq_queue_job{taskq_status="pending"})')).toEqual([
      'metric taskq_queue_job is not in METRIC_CATALOG',
      'label queue is carried by none of taskq_queue_job',
    ]);
    expect(catalogProblems('taskq_dispatch_jobs_total_count')).toEqual([
      'metric taskq_dispatch_jobs_total_count is not in METRIC_CATALOG',
    ]);
    expect(catalogProblems('taskq_queue_jobs{taskq_outcome="failed"}')).toEqual([
      'label taskq_outcome in a matcher of taskq_queue_jobs is not one of its labels',
    ]);
    expect(catalogProblems('sum by (le) (taskq_fleet_leaders)')).toEqual([
      'label le is carried by none of taskq_fleet_leaders',
    ]);
    expect(catalogProblems('max(taskq_fleet_leaders)', ['messaging_destination_name'])).toEqual([
      'label messaging_destination_name is carried by none of taskq_fleet_leaders',
    ]);
  });

  it('refuses rule-file forms it cannot read instead of skipping them', () => {
    expect(() => parseRules('- alert: A\n  expr: "up"\n')).toThrow(/block scalar/);
    expect(() => parseRules('- alert: A\n  expr: sum(\n    up)\n')).toThrow(/continued/);
    expect(() => parseRules('- alert: A\n  expr: up\n  expr: up\n')).toThrow(/2 expr keys/);
  });
});

describe('docs/ops/prometheus-alerts.yml', () => {
  const rules = parseRules(rulesText);

  it('has the alerts the runbook describes', () => {
    expect(rules.map((r) => r.name)).toEqual(
      expect.arrayContaining([
        'TaskqQueueWithoutWorkers',
        'TaskqDispatchLatencyHigh',
        'TaskqFailureRateHigh',
        'TaskqWatchdogTripped',
        'TaskqLeaderAbsent',
        'TaskqOldestPendingJobOld',
      ]),
    );
    const readme = readFileSync(fileURLToPath(new URL('../../docs/ops/README.md', import.meta.url)), 'utf8');
    for (const { name } of rules) expect(readme, `README runbook for ${name}`).toContain(name);
  });

  it('references only catalog metrics and labels, in expressions and annotations', () => {
    for (const rule of rules) {
      expect(catalogProblems(rule.expr, templateLabels(rule.text, 'alert')), rule.name).toEqual([]);
    }
  });

  it('gives every alert a severity, a summary and a description', () => {
    for (const rule of rules) {
      expect(rule.text, rule.name).toMatch(/\n\s+severity: (critical|warning|info)\n/);
      expect(rule.text, rule.name).toMatch(/\n\s+summary: /);
      expect(rule.text, rule.name).toMatch(/\n\s+description: /);
    }
  });

  it.skipIf(!existsSync(PROMTOOL))('passes promtool check rules, which counts as many rules', async () => {
    const { stdout } = await promisify(execFile)(PROMTOOL, ['check', 'rules', RULES_PATH]);
    expect(stdout).toContain(`SUCCESS: ${rules.length} rules found`);
  });
  if (!existsSync(PROMTOOL)) console.warn(`skipping promtool check rules: ${PROMTOOL} is not installed`);
});

describe('docs/ops/grafana-dashboard.json', () => {
  interface Target {
    expr?: string;
    legendFormat?: string;
    datasource?: { uid?: string };
  }
  interface Panel {
    id: number;
    type: string;
    title: string;
    targets?: Target[];
    gridPos: { x: number; w: number };
  }
  const dashboard = JSON.parse(readFileSync(DASHBOARD_PATH, 'utf8')) as {
    schemaVersion: number;
    uid: string;
    panels: Panel[];
    templating: { list: { name: string; type: string; query: unknown; definition?: string }[] };
  };
  const panels = dashboard.panels.filter((p) => p.type !== 'row');

  it('is a Grafana dashboard with a Prometheus data source variable and a queue variable', () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dashboard.uid).toMatch(/^[\w-]{1,40}$/);
    const vars = new Map(dashboard.templating.list.map((v) => [v.name, v]));
    expect(vars.get('datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    const queue = vars.get('queue');
    expect(queue).toMatchObject({ type: 'query' });
    const m = /^label_values\((\w+),\s*(\w+)\)$/.exec(queue!.definition ?? '');
    expect(m, queue!.definition).not.toBeNull();
    expect(catalogProblems(m![1]!, [m![2]!])).toEqual([]);
    expect(m![2]).toBe('messaging_destination_name');
  });

  it('gives every panel a target on the data source variable, with unique ids inside the grid', () => {
    expect(panels.length).toBeGreaterThanOrEqual(12);
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    for (const panel of panels) {
      expect(panel.targets?.length ?? 0, panel.title).toBeGreaterThan(0);
      expect(panel.gridPos.x + panel.gridPos.w, panel.title).toBeLessThanOrEqual(24);
      for (const target of panel.targets!) {
        expect(target.expr ?? '', panel.title).not.toBe('');
        expect(target.datasource?.uid, panel.title).toBe('${datasource}');
      }
    }
  });

  it('references only catalog metrics and labels, in queries and legends', () => {
    for (const panel of panels) {
      for (const target of panel.targets!) {
        const legend = templateLabels(target.legendFormat ?? '', 'legend');
        expect(catalogProblems(target.expr!, legend), `${panel.title}: ${target.expr}`).toEqual([]);
      }
    }
  });

  it('filters every per-queue query by the queue variable', () => {
    for (const panel of panels) {
      for (const target of panel.targets!) {
        const queueMetrics = promqlReferences(target.expr!).metrics.filter((m) =>
          SERIES.get(m)?.attributes.includes('messaging.destination.name'),
        );
        if (queueMetrics.length > 0) {
          expect(target.expr, panel.title).toContain('messaging_destination_name=~"$queue"');
        }
      }
    }
  });
});
