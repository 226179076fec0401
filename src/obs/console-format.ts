/**
 * `logFormat: 'console'`: one pino JSON record turned into one line a person can read,
 *
 * ```
 * 2026-12-05T23:01:21.345Z WARN  job-attempt-failed jobId=0193… actor=send-email attempt=1 errorClass=TypeError message="connect refused"
 * ```
 *
 * time (UTC), level, event name, then the record's fields as `key=value` in the order pino wrote
 * them. Strings are bare when they hold no space, quote, `=` or control character, else JSON-quoted;
 * objects are compact JSON. `pid`, `hostname` and `name` are left out (they never change within a
 * process). A stack (`stack`, or `err.stack`) follows on indented lines. Written by TaskQ rather
 * than pino-pretty: no dependency, and the same line in production as in development.
 */

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO ',
  40: 'WARN ',
  50: 'ERROR',
  60: 'FATAL',
};

const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name']);

/** A value that can stand bare after `key=`. */
// eslint-disable-next-line no-control-regex -- control characters are what must be quoted
const BARE = /^[^\s"'=\\\u0000-\u001f\u007f]+$/;

/** Formats one pino JSON line (with or without its newline); a line that is not JSON is returned as is. */
export function formatConsoleLine(json: string): string {
  let record: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(json);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return ensureNewline(json);
    record = parsed as Record<string, unknown>;
  } catch {
    return ensureNewline(json);
  }
  const time =
    typeof record.time === 'number' ? new Date(record.time).toISOString() : String(record.time ?? '');
  const level =
    typeof record.level === 'number'
      ? (LEVELS[record.level] ?? String(record.level))
      : String(record.level ?? '').toUpperCase();
  const parts: string[] = [time, level];
  if (record.msg !== undefined) parts.push(String(record.msg));
  const stacks: string[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (OMITTED.has(key) || value === undefined) continue;
    if (key === 'stack' && typeof value === 'string') {
      stacks.push(value);
      continue;
    }
    if (key === 'err' && value !== null && typeof value === 'object') {
      const { stack, ...rest } = value as Record<string, unknown>;
      if (typeof stack === 'string') stacks.push(stack);
      parts.push(`${key}=${formatValue(errSummary(rest))}`);
      continue;
    }
    parts.push(`${key}=${formatValue(value)}`);
  }
  let line = parts.join(' ');
  for (const stack of stacks) line += `\n${indent(stack)}`;
  return `${line}\n`;
}

/** `Type: message` for a serialised error with nothing else of note, else its fields as JSON. */
function errSummary(err: Record<string, unknown>): unknown {
  const keys = Object.keys(err).filter((k) => k !== 'type' && k !== 'message');
  if (keys.length === 0 && typeof err.message === 'string')
    return typeof err.type === 'string' ? `${err.type}: ${err.message}` : err.message;
  return err;
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return value !== '' && BARE.test(value) ? value : JSON.stringify(value);
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
}

function ensureNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}
