/**
 * How `taskq jobs` renders jobs. Nothing here prints a payload, a result, heartbeat details or
 * progress data unless the caller asks for them (`--payload`): they are the application's data
 * (personal or secret, often), and an operator's terminal or a CI log is no place for them by default.
 */
import type { AttemptRow, EventRow, JobRow } from '../backend/types.js';
import { formatTable } from './schedules-command.js';

/** Most characters of a payload or result `taskq jobs show --payload` prints (JSON text). */
export const SHOWN_VALUE_MAX_CHARS = 4000;

/** Most characters of an error message or traceback shown (the worker's `exceptionMessageMaxChars` default). */
export const SHOWN_ERROR_MAX_CHARS = 2000;

/** Most attempts and events `taskq jobs show` prints (the most recent). */
export const SHOWN_HISTORY_MAX_ROWS = 50;

/** Table columns of `taskq jobs list`. */
export const JOB_TABLE_HEADER = [
  'ID',
  'ACTOR',
  'QUEUE',
  'STATUS',
  'ATTEMPT',
  'CREATED (UTC)',
  'SCHEDULED/FINISHED (UTC)',
  'ERROR',
];

const iso = (d: Date | null): string => (d === null ? '-' : d.toISOString());

/** One `taskq jobs list` table row. */
export function jobTableRow(j: JobRow): string[] {
  return [
    j.id,
    j.actor,
    j.queue,
    j.status,
    `${j.attempt}/${j.maxAttempts}`,
    iso(j.createdAt),
    iso(j.finishedAt ?? j.scheduledAt),
    j.errorClass ?? '-',
  ];
}

/** `text` cut to `max` characters, saying how much was left out. */
export function bounded(text: string, max: number): { text: string; truncated: boolean } {
  if (text.length <= max) return { text, truncated: false };
  return { text: `${text.slice(0, max)}… (${text.length - max} more characters)`, truncated: true };
}

/** A user value (payload, result) for JSON output: the value when small enough, else a preview. */
function boundedValue(value: unknown): { value: unknown } | { preview: string; chars: number } {
  const text = JSON.stringify(value) ?? 'null';
  if (text.length <= SHOWN_VALUE_MAX_CHARS) return { value };
  return { preview: text.slice(0, SHOWN_VALUE_MAX_CHARS), chars: text.length };
}

/**
 * A row for `--json`: every column except the application's values, which appear only with
 * `withValues` (`payload`, `result` and `heartbeatDetails` bounded, `progressState.data`).
 * Error texts are bounded either way.
 */
export function jobJson(j: JobRow, withValues: boolean): Record<string, unknown> {
  const { payload, result, heartbeatDetails, progressState, errorMessage, errorTraceback, ...rest } = j;
  const { data, ...progress } = progressState;
  const errors = {
    errorMessage: errorMessage === null ? null : bounded(errorMessage, SHOWN_ERROR_MAX_CHARS).text,
    errorTraceback: errorTraceback === null ? null : bounded(errorTraceback, SHOWN_ERROR_MAX_CHARS).text,
  };
  if (!withValues) return { ...rest, progressState: progress, ...errors };
  return {
    ...rest,
    ...errors,
    progressState: data === undefined ? progress : { ...progress, data },
    payload: boundedValue(payload),
    result: boundedValue(result),
    heartbeatDetails: boundedValue(heartbeatDetails),
  };
}

/** An attempt for `--json`, its error texts bounded. */
export function attemptJson(a: AttemptRow): Record<string, unknown> {
  return {
    ...a,
    errorMessage: a.errorMessage === null ? null : bounded(a.errorMessage, SHOWN_ERROR_MAX_CHARS).text,
    errorTraceback: a.errorTraceback === null ? null : bounded(a.errorTraceback, SHOWN_ERROR_MAX_CHARS).text,
  };
}

/** The last {@link SHOWN_HISTORY_MAX_ROWS} of `rows` and how many came before them. */
export function recent<T>(rows: readonly T[]): { rows: T[]; omitted: number } {
  const omitted = Math.max(0, rows.length - SHOWN_HISTORY_MAX_ROWS);
  return { rows: rows.slice(omitted), omitted };
}

const valueLine = (label: string, value: unknown, withValues: boolean): string => {
  if (!withValues) return `  ${label.padEnd(13)} (hidden: pass --payload to show it)`;
  const text = JSON.stringify(value) ?? 'null';
  return `  ${label.padEnd(13)} ${bounded(text, SHOWN_VALUE_MAX_CHARS).text}`;
};

const eventText = (e: EventRow): string => {
  const d = e.detail;
  if (e.kind === 'state_change') {
    const reason = typeof d.reason === 'string' ? ` (${d.reason})` : '';
    return `${String(d.from_state ?? '?')} → ${String(d.to_state ?? '?')}${reason}`;
  }
  const reason = typeof d.reason === 'string' ? `: ${d.reason}` : '';
  return `cancel requested, phase ${String(d.phase ?? '?')}${reason}`;
};

/** The lines of `taskq jobs show` (without `--json`). */
export function describeJob(
  j: JobRow,
  attempts: readonly AttemptRow[],
  events: readonly EventRow[],
  withValues: boolean,
): string[] {
  const batch = typeof j.metadata.batch_id === 'string' ? j.metadata.batch_id : null;
  const progress = j.progressState;
  const progressText =
    j.progressSeq === 0
      ? '-'
      : [
          typeof progress.step === 'string' ? progress.step : null,
          typeof progress.percent === 'number' ? `${progress.percent}%` : null,
          typeof progress.detail === 'string' ? bounded(progress.detail, 200).text : null,
        ]
          .filter((x) => x !== null)
          .join(' ') || `seq ${j.progressSeq}`;
  const lines = [
    `job ${j.id}`,
    `  actor         ${j.actor}`,
    `  queue         ${j.queue}`,
    `  status        ${j.status}`,
    `  attempt       ${j.attempt}/${j.maxAttempts} (${j.retryKind} retries)`,
    `  priority      ${j.priority}`,
    `  identity key  ${j.identityKey ?? '-'}`,
    `  fairness key  ${j.fairnessKey ?? '-'}`,
    `  idempotency   ${j.idempotencyKey === null ? '-' : `${j.idempotencyKey}${j.idempotencyScope === '' ? '' : ` (scope ${j.idempotencyScope})`}`}`,
    `  tags          ${j.tags.length === 0 ? '-' : j.tags.join(', ')}`,
    `  batch         ${batch ?? '-'}`,
    `  created       ${iso(j.createdAt)}`,
    `  scheduled     ${iso(j.scheduledAt)}`,
    `  started       ${iso(j.startedAt)}`,
    `  finished      ${iso(j.finishedAt)}`,
    `  worker        ${j.lockedByWorker === null ? '-' : `${j.lockedByWorker} (lease until ${iso(j.lockExpiresAt)})`}`,
    `  cancel        ${j.cancelRequestedAt === null ? '-' : `requested ${iso(j.cancelRequestedAt)}${j.cancelPhase > 0 ? ` (phase ${j.cancelPhase})` : ''}`}`,
    `  progress      ${progressText}`,
    valueLine('payload', j.payload, withValues),
    valueLine('result', j.result, withValues),
  ];
  if (j.errorClass !== null || j.errorMessage !== null) {
    lines.push(
      `  error         ${j.errorClass ?? 'Error'}: ${bounded(j.errorMessage ?? '', SHOWN_ERROR_MAX_CHARS).text}`,
    );
    if (j.errorTraceback !== null) {
      lines.push('  traceback:');
      for (const l of bounded(j.errorTraceback, SHOWN_ERROR_MAX_CHARS).text.split('\n'))
        lines.push(`    ${l}`);
    }
  } else lines.push('  error         -');
  const shownAttempts = recent(attempts);
  lines.push(
    `  attempts (${attempts.length}${shownAttempts.omitted > 0 ? `, last ${shownAttempts.rows.length} shown` : ''}):`,
  );
  if (attempts.length > 0)
    for (const l of formatTable(
      ['#', 'OUTCOME', 'WORKER', 'STARTED (UTC)', 'FINISHED (UTC)', 'MS', 'ERROR'],
      shownAttempts.rows.map((a) => [
        String(a.attempt),
        a.outcome,
        a.workerId ?? '-',
        iso(a.startedAt),
        iso(a.finishedAt),
        a.durationMs === null ? '-' : String(Math.round(a.durationMs)),
        a.errorClass === null
          ? '-'
          : `${a.errorClass}: ${bounded((a.errorMessage ?? '').split('\n')[0] ?? '', 120).text}`,
      ]),
    ))
      lines.push(`    ${l}`);
  const shownEvents = recent(events);
  lines.push(
    `  events (${events.length}${shownEvents.omitted > 0 ? `, last ${shownEvents.rows.length} shown` : ''}):`,
  );
  if (events.length > 0)
    for (const l of formatTable(
      ['AT (UTC)', 'EVENT'],
      shownEvents.rows.map((e) => [iso(e.occurredAt), bounded(eventText(e), 300).text]),
    ))
      lines.push(`    ${l}`);
  return lines;
}
