import { isTerminal } from '../backend/state-machine.js';
import type { JobRow, JobStatus } from '../backend/types.js';
import { toMs, type Duration } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { isUuid } from '../core/ids.js';
import { closableStream } from '../progress/closable-stream.js';
import {
  buildProgressEvent,
  progressEventFromRow,
  progressFieldsOf,
} from '../progress/progress-event-codec.js';
import type { ProgressEvent } from '../progress/progress-event.js';
import { STREAM_POLL_INTERVAL_MS, STREAM_POLL_TIMEOUT_MS, watchJob } from '../progress/job-watch.js';
import { streamClosedError, type StreamSources } from './stream-sources.js';
import { checkOptionsObject } from '../core/closest-name.js';

const STREAM_OPTION_KEYS: readonly string[] = ['pollInterval', 'pollTimeout', 'signal'];

/** Options of `JobHandle.progressStream()`. */
export interface ProgressStreamOptions {
  /** How often Postgres is read while no Redis subscription is live. Default 500 ms. */
  pollInterval?: Duration;
  /** Longest time between two reads while Redis is live (a safety net for lost messages). Default 30 s. */
  pollTimeout?: Duration;
  /** Aborting it ends the iteration quietly. */
  signal?: AbortSignal;
}

/**
 * `JobHandle.progressStream()`: a job's progress events until the one with `terminal: true`.
 *
 * - `kind: 'progress'` events come from Redis when it is configured and live (every report), and
 *   otherwise from Postgres reads every `pollInterval` or on the progress NOTIFY (coalesced: one
 *   event per flush, carrying the merged state). Their `seq` strictly increases: anything at or
 *   below the last delivered `seq` is dropped, so Redis and Postgres never deliver one twice.
 * - `kind: 'state_change'` events (non-terminal) report a status change seen in a read; they carry
 *   the last delivered `seq` and state, so `seq` never decreases over the stream.
 * - The last event is always the terminal one, built from the final row, delivered once.
 */
export function progressStream(
  sources: StreamSources,
  jobId: string,
  options: ProgressStreamOptions = {},
): AsyncIterableIterator<ProgressEvent> {
  checkOptionsObject(options, STREAM_OPTION_KEYS, 'progressStream.options', 'an option of progressStream()');
  const pollIntervalMs = toMs(options.pollInterval ?? STREAM_POLL_INTERVAL_MS, 'progressStream.pollInterval');
  const pollTimeoutMs = toMs(options.pollTimeout ?? STREAM_POLL_TIMEOUT_MS, 'progressStream.pollTimeout');
  if (!isUuid(jobId)) throw new InvalidArgumentError('progressStream.jobId', jobId, 'must be a UUID');
  const id = jobId.toLowerCase();
  return closableStream((stop) => progressEvents(sources, id, { pollIntervalMs, pollTimeoutMs }, stop), {
    signal: options.signal,
    closed: sources.closed,
    closedError: streamClosedError,
  });
}

async function* progressEvents(
  sources: StreamSources,
  jobId: string,
  timing: { pollIntervalMs: number; pollTimeoutMs: number },
  stop: AbortSignal,
): AsyncGenerator<ProgressEvent, boolean> {
  let lastSeq = 0;
  let lastState: Record<string, unknown> = {};
  let lastStatus: JobStatus | null = null;
  const items = watchJob(jobId, sources, { ...timing, listenCoversProgress: false }, stop);
  for await (const item of items) {
    if (item.type === 'event') {
      const e = item.event;
      if (e.seq <= lastSeq) continue;
      lastSeq = e.seq;
      lastState = { ...progressFieldsOf(e) };
      lastStatus = e.status;
      yield e;
      continue;
    }
    const row = item.row;
    if (isTerminal(row.status)) {
      yield terminalEvent(row, lastSeq, lastState);
      return true;
    }
    if (lastStatus !== null && row.status !== lastStatus) {
      yield buildProgressEvent({
        kind: 'state_change',
        jobId: row.id,
        actor: row.actor,
        seq: lastSeq,
        status: row.status,
        state: lastState,
        terminal: false,
      });
    }
    lastStatus = row.status;
    if (row.progressSeq > lastSeq) {
      lastSeq = row.progressSeq;
      lastState = row.progressState;
      yield progressEventFromRow(row);
    }
  }
  return false;
}

/** The last event: the final row's status and progress (or the newer progress already delivered). */
function terminalEvent(row: JobRow, lastSeq: number, lastState: Record<string, unknown>): ProgressEvent {
  const rowIsNewest = row.progressSeq >= lastSeq;
  return buildProgressEvent({
    kind: 'state_change',
    jobId: row.id,
    actor: row.actor,
    seq: rowIsNewest ? row.progressSeq : lastSeq,
    status: row.status,
    state: rowIsNewest ? row.progressState : lastState,
    terminal: true,
  });
}
