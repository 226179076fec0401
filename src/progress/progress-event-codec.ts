import { JOB_STATUSES, type JobRow, type JobStatus } from '../backend/types.js';
import type { ProgressEvent, ProgressUpdate } from './progress-event.js';

const STATUSES: ReadonlySet<string> = new Set(JOB_STATUSES);

/** The progress fields of a stored or published state (`step`, `percent`, `detail`, `data`), absent ones left out. */
export function progressFieldsOf(
  state: { step?: unknown; percent?: unknown; detail?: unknown; data?: unknown } | null | undefined,
): ProgressUpdate {
  const out: ProgressUpdate = {};
  if (!state) return out;
  if (typeof state.step === 'string') out.step = state.step;
  if (typeof state.percent === 'number') out.percent = state.percent;
  if (typeof state.detail === 'string') out.detail = state.detail;
  if (state.data !== undefined && state.data !== null) out.data = state.data;
  return out;
}

/**
 * Builds an event from values known to the caller. Absent progress fields are left out, so the
 * JSON on the wire stays compact (the seeds' `exclude_none`).
 */
export function buildProgressEvent(args: {
  kind: ProgressEvent['kind'];
  jobId: string;
  actor: string;
  seq: number;
  status: JobStatus;
  state: Record<string, unknown> | null | undefined;
  terminal: boolean;
}): ProgressEvent {
  return {
    v: 1,
    kind: args.kind,
    jobId: args.jobId,
    actor: args.actor,
    ts: new Date().toISOString(),
    seq: args.seq,
    status: args.status,
    ...progressFieldsOf(args.state),
    terminal: args.terminal,
  };
}

/** A `kind: 'progress'` event synthesised from a row (Postgres-driven streams). */
export function progressEventFromRow(row: JobRow): ProgressEvent {
  return buildProgressEvent({
    kind: 'progress',
    jobId: row.id,
    actor: row.actor,
    seq: row.progressSeq,
    status: row.status,
    state: row.progressState,
    terminal: false,
  });
}

/** The wire form of an event (JSON; absent fields left out). */
export function encodeProgressEvent(event: ProgressEvent): string {
  return JSON.stringify(event);
}

/**
 * Parses and checks one message from a progress channel; null when it is not a version-1 event
 * (of `expectedJobId`, when given). Messages come from other processes: nothing is trusted.
 */
export function decodeProgressEvent(text: string, expectedJobId?: string): ProgressEvent | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const m = raw as Record<string, unknown>;
  if (m.v !== 1) return null;
  if (m.kind !== 'progress' && m.kind !== 'state_change') return null;
  if (typeof m.jobId !== 'string' || typeof m.actor !== 'string' || typeof m.ts !== 'string') return null;
  if (expectedJobId !== undefined && m.jobId.toLowerCase() !== expectedJobId.toLowerCase()) return null;
  if (typeof m.seq !== 'number' || !Number.isInteger(m.seq) || m.seq < 0) return null;
  if (typeof m.status !== 'string' || !STATUSES.has(m.status)) return null;
  if (typeof m.terminal !== 'boolean') return null;
  return {
    v: 1,
    kind: m.kind,
    jobId: m.jobId,
    actor: m.actor,
    ts: m.ts,
    seq: m.seq,
    status: m.status as JobStatus,
    ...progressFieldsOf(m),
    terminal: m.terminal,
  };
}
