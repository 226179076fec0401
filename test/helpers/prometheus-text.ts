/**
 * A small, strict parser of the Prometheus text exposition format 0.0.4, for tests that check what
 * a `/metrics` endpoint serves without a Prometheus server: `# HELP name text`, `# TYPE name type`,
 * samples `name{label="value",...} value [timestamp]`, other `#` lines as comments, blank lines
 * ignored. Label values unescape `\\`, `\"` and `\n`; HELP text unescapes `\\` and `\n`. Anything
 * else (a bad name, an unknown escape, an unterminated value, a second TYPE for a family, a TYPE
 * after the family's samples) is rejected with an error naming the line.
 */

/** The metric types of the format. */
export type PromType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

/** One sample line. */
export interface PromSample {
  /** The sample's name (with `_bucket`, `_sum`, `_count`, `_total` as written). */
  name: string;
  labels: Record<string, string>;
  value: number;
  /** Milliseconds since the epoch, when the line carried one. */
  timestamp?: number;
  /** 1-based line number, for messages. */
  line: number;
}

/** A metric family: its HELP and TYPE, and the samples whose names belong to it. */
export interface PromFamily {
  name: string;
  help?: string;
  type?: PromType;
  samples: PromSample[];
}

/** The parsed exposition. */
export interface PromExposition {
  /** Families by name, in order of first appearance. */
  families: Map<string, PromFamily>;
  samples: PromSample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES: readonly PromType[] = ['counter', 'gauge', 'histogram', 'summary', 'untyped'];
/** The format's floats: Go's ParseFloat spellings, plus the special values. */
const FLOAT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const SUFFIXES: Partial<Record<PromType, readonly string[]>> = {
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['_sum', '_count'],
};

/** A line the parser refuses, with its number and text. */
export class PromParseError extends Error {
  constructor(
    readonly lineNumber: number,
    readonly lineText: string,
    reason: string,
  ) {
    super(`line ${lineNumber} ${JSON.stringify(lineText)}: ${reason}`);
  }
}

function parseFloatStrict(text: string): number | null {
  if (text === 'NaN') return NaN;
  if (/^[+]?Inf$/.test(text)) return Infinity;
  if (text === '-Inf') return -Infinity;
  return FLOAT.test(text) ? Number(text) : null;
}

/** Parses `{a="x",b="y"}` starting at `text[start] === '{'`; returns the labels and the index after `}`. */
function parseLabels(
  text: string,
  start: number,
  fail: (why: string) => never,
): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  let i = start + 1;
  for (;;) {
    if (text[i] === '}') return [labels, i + 1];
    const nameMatch = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(text.slice(i));
    if (!nameMatch) fail(`expected a label name at column ${i + 1}`);
    const name = nameMatch[0];
    if (!LABEL_NAME.test(name)) fail(`bad label name ${JSON.stringify(name)}`);
    if (name in labels) fail(`label ${name} appears twice`);
    i += name.length;
    if (text[i] !== '=') fail(`expected '=' after label ${name}`);
    if (text[i + 1] !== '"') fail(`expected '"' to open the value of label ${name}`);
    i += 2;
    let value = '';
    for (;;) {
      const c = text[i];
      if (c === undefined) fail(`unterminated value of label ${name}`);
      if (c === '"') break;
      if (c === '\\') {
        const e = text[i + 1];
        if (e === '\\') value += '\\';
        else if (e === '"') value += '"';
        else if (e === 'n') value += '\n';
        else fail(`unknown escape \\${e ?? ''} in the value of label ${name}`);
        i += 2;
        continue;
      }
      value += c;
      i += 1;
    }
    labels[name] = value;
    i += 1;
    if (text[i] === ',') {
      i += 1;
      continue;
    }
    if (text[i] !== '}') fail(`expected ',' or '}' after the value of label ${name}`);
  }
}

/** The family a sample named `name` belongs to, given the TYPEs declared so far. */
function familyOf(name: string, families: Map<string, PromFamily>): string {
  if (families.has(name) && families.get(name)!.type !== undefined) return name;
  for (const [fname, f] of families) {
    const suffixes = f.type ? SUFFIXES[f.type] : undefined;
    if (suffixes?.some((s) => name === fname + s)) return fname;
  }
  return name;
}

/** Parses an exposition; throws {@link PromParseError} on the first malformed line. */
export function parsePrometheusText(text: string): PromExposition {
  const families = new Map<string, PromFamily>();
  const samples: PromSample[] = [];
  const family = (name: string): PromFamily => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { name, samples: [] }));
    return f;
  };
  const lines = text.split('\n');
  // The format ends every line, the last included, with '\n'.
  if (lines.at(-1) !== '')
    throw new PromParseError(lines.length, lines.at(-1)!, 'the last line has no newline');
  lines.pop();
  lines.forEach((raw, index) => {
    const n = index + 1;
    const fail = (why: string): never => {
      throw new PromParseError(n, raw, why);
    };
    if (raw.trim() === '') return;
    if (raw.startsWith('#')) {
      const m = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(raw);
      if (!m) return; // any other comment
      const [, keyword, name, rest = ''] = m as unknown as [string, string, string, string | undefined];
      if (!METRIC_NAME.test(name)) fail(`bad metric name ${JSON.stringify(name)}`);
      const f = family(name);
      if (keyword === 'HELP') {
        if (f.help !== undefined) fail(`a second HELP for ${name}`);
        f.help = rest.replace(/\\(.?)/g, (_, c: string) => {
          if (c === 'n') return '\n';
          if (c === '\\') return '\\';
          return fail(`unknown escape \\${c} in the HELP of ${name}`);
        });
      } else {
        if (f.type !== undefined) fail(`a second TYPE for ${name}`);
        if (f.samples.length > 0) fail(`the TYPE of ${name} comes after its samples`);
        const type = rest.trim();
        if (!TYPES.includes(type as PromType)) fail(`unknown type ${JSON.stringify(type)}`);
        f.type = type as PromType;
      }
      return;
    }
    const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(raw);
    if (!nameMatch) fail('expected a metric name');
    const name = nameMatch![0];
    let i = name.length;
    let labels: Record<string, string> = {};
    if (raw[i] === '{') [labels, i] = parseLabels(raw, i, fail);
    const rest = raw.slice(i);
    const m = /^[ \t]+(\S+)(?:[ \t]+(\S+))?[ \t]*$/.exec(rest);
    if (!m) fail('expected " value [timestamp]" after the name and labels');
    const value = parseFloatStrict(m![1]!);
    if (value === null) fail(`bad value ${JSON.stringify(m![1])}`);
    const sample: PromSample = { name, labels, value: value!, line: n };
    if (m![2] !== undefined) {
      if (!/^-?\d+$/.test(m![2])) fail(`bad timestamp ${JSON.stringify(m![2])}`);
      sample.timestamp = Number(m![2]);
    }
    samples.push(sample);
    family(familyOf(name, families)).samples.push(sample);
  });
  return { families, samples };
}
