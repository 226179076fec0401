/**
 * Summary of several benchmark runs: `npx tsx bench/summarize.ts [options] [run.json …]`.
 *
 * Reads the runs' JSON (bench/results/<timestamp>.json, written by run.ts; default: the three newest
 * full, non-quick runs there), checks every target row on the median over the runs of its per-run
 * ratio (met / level within ±3 % / missed), tabulates the median over runs of every system's figure
 * in every case, and prints markdown: hardware and versions, a one-command reproduction, the
 * targets, the charts, the medians and every system's settings.
 *
 * Options:
 *   --svg-dir <dir>   write the charts there as SVG files and link them from the markdown
 *   --out <file>      write the markdown there instead of stdout (image links relative to it)
 *   --results <dir>   where to look for runs when none are named (default bench/results)
 *   --runs <n>        how many of the newest full runs to take when none are named (default 3)
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { Report } from './lib/report.js';
import { chartSpecs, renderSummaryMarkdown, summarizeCells, systemsOf, MIN_RUNS } from './lib/summary.js';
import { renderBarChart } from './lib/svg-bar-chart.js';

const HERE = dirname(fileURLToPath(import.meta.url));

function usage(msg: string): never {
  process.stderr.write(`summarize: ${msg}\nsee the header of bench/summarize.ts for the options\n`);
  process.exit(2);
}

function readRun(file: string): Report {
  let r: Report;
  try {
    r = JSON.parse(readFileSync(file, 'utf8')) as Report;
  } catch (err) {
    usage(`cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!Array.isArray(r.series) || !r.env || !r.options)
    usage(`${file} is not a bench run (no series, env or options)`);
  return r;
}

/** The newest `n` full runs in `dir`: file names are ISO timestamps, so they sort by time. */
function newestFullRuns(dir: string, n: number): string[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  } catch {
    usage(`no runs named and no results directory ${dir}`);
  }
  const full = files
    .sort()
    .reverse()
    .map((f) => join(dir, f))
    .filter((f) => !readRun(f).options.quick)
    .slice(0, n);
  if (full.length === 0) usage(`no full runs in ${dir} (quick runs are taken only when named)`);
  if (full.length < n) process.stderr.write(`summarize: only ${full.length} full run(s) in ${dir}\n`);
  // Oldest first, as the columns read.
  return full.reverse();
}

function main(): void {
  const argv = process.argv.slice(2);
  let svgDir: string | null = null;
  let out: string | null = null;
  let resultsDir = join(HERE, 'results');
  let count = MIN_RUNS;
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    if (a === '--svg-dir') svgDir = resolve(value());
    else if (a === '--out') out = resolve(value());
    else if (a === '--results') resultsDir = resolve(value());
    else if (a === '--runs') {
      count = Number(value());
      if (!Number.isInteger(count) || count < 1) usage('--runs must be a positive integer');
    } else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else files.push(resolve(a));
  }
  const paths = files.length ? files : newestFullRuns(resultsDir, count);
  const runs = paths.map(readRun);

  let charts: { specs: ReturnType<typeof chartSpecs>; relDir: string } | null = null;
  if (svgDir) {
    const titles = new Map<string, string>();
    for (const r of runs) for (const s of r.systems) titles.set(s.id, s.title);
    const specs = chartSpecs(summarizeCells(runs), systemsOf(runs), titles);
    mkdirSync(svgDir, { recursive: true });
    for (const s of specs) writeFileSync(join(svgDir, s.file), renderBarChart(s.chart));
    // Links relative to the markdown file (or to the working directory when printing).
    const rel = relative(out ? dirname(out) : process.cwd(), svgDir)
      .split('\\')
      .join('/');
    charts = { specs, relDir: rel };
    process.stderr.write(`summarize: wrote ${specs.length} chart(s) to ${svgDir}\n`);
  }
  const md = renderSummaryMarkdown({ runs, names: paths.map((p) => basename(p, '.json')), charts });
  if (out) {
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, md);
    process.stderr.write(`summarize: wrote ${out}\n`);
  } else process.stdout.write(md);
}

main();
