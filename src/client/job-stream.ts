import { isTerminal } from '../backend/state-machine.js';
import type { JobRow, JobStatus } from '../backend/types.js';
import { toMs, type Duration } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { isUuid } from '../core/ids.js';
import { closableStream } from '../progress/closable-stream.js';
import { progressFieldsOf } from '../progress/progress-event-codec.js';
import type { JobEvent } from '../progress/progress-event.js';
import { STREAM_POLL_INTERVAL_MS, STREAM_POLL_TIMEOUT_MS, watchJob } from '../progress/job-watch.js';
import { streamClosedError, type StreamSources } from './stream-sources.js';
import { checkOptionsObject } from '../core/closest-name.js';

const STREAM_OPTION_KEYS: readonly string[] = ['pollTimeout', 'pollInterval', 'signal'];

/** Options of `TaskQ.stream()`. */
export interface JobStreamOptions {
  /** Longest time between two reads of the row while Redis or LISTEN is live. Default 30 s. */
  pollTimeout?: Duration;
  /** How often the row is read while neither Redis nor LISTEN is available. Default 500 ms. */
  pollInterval?: Duration;
  /** Aborting it ends the iteration quietly. */
  signal?: AbortSignal;
}

/**
 * `TaskQ.stream()`: snapshots of one job. The first is the current row (a terminal job stops
 * there); then one per observed change — a status change or a higher `progressSeq` — driven by
 * Redis when configured (each progress report) or by LISTEN on the progress and done channels
 * (each flush), with the row re-read at least every `pollTimeout`. `progressSeq` never decreases
 * and no snapshot repeats the previous one; the last has `terminal: true`, taken from the final row.
 */
export function jobStream(
  sources: StreamSources,
  jobId: string,
  options: JobStreamOptions = {},
): AsyncIterableIterator<JobEvent> {
  checkOptionsObject(options, STREAM_OPTION_KEYS, 'stream.options', 'an option of stream()');
  const pollTimeoutMs = toMs(options.pollTimeout ?? STREAM_POLL_TIMEOUT_MS, 'stream.pollTimeout');
  const pollIntervalMs = Math.min(
    pollTimeoutMs,
    toMs(options.pollInterval ?? STREAM_POLL_INTERVAL_MS, 'stream.pollInterval'),
  );
  if (!isUuid(jobId)) throw new InvalidArgumentError('stream.jobId', jobId, 'must be a UUID');
  const id = jobId.toLowerCase();
  return closableStream((stop) => jobEvents(sources, id, { pollIntervalMs, pollTimeoutMs }, stop), {
    signal: options.signal,
    closed: sources.closed,
    closedError: streamClosedError,
  });
}

async function* jobEvents(
  sources: StreamSources,
  jobId: string,
  timing: { pollIntervalMs: number; pollTimeoutMs: number },
  stop: AbortSignal,
): AsyncGenerator<JobEvent, boolean> {
  let last: JobEvent | null = null;
  const items = watchJob(jobId, sources, { ...timing, listenCoversProgress: true }, stop);
  for await (const item of items) {
    let next: JobEvent | null;
    if (item.type === 'event') {
      const e = item.event;
      next =
        last !== null && e.seq <= last.progressSeq
          ? null
          : {
              jobId,
              status: e.status,
              progressState: { ...progressFieldsOf(e) },
              progressSeq: e.seq,
              terminal: false,
            };
    } else {
      next = fromRow(item.row, last);
    }
    if (next === null) continue;
    last = next;
    yield next;
    if (next.terminal) return true;
  }
  return false;
}

/** The snapshot of a row, or null when it shows nothing new. Progress never goes backwards. */
function fromRow(row: JobRow, last: JobEvent | null): JobEvent | null {
  const terminal = isTerminal(row.status);
  const statusChanged = last === null || row.status !== last.status;
  const newer = last === null || row.progressSeq > last.progressSeq;
  if (!terminal && !statusChanged && !newer) return null;
  const useRow = last === null || row.progressSeq >= last.progressSeq;
  return {
    jobId: row.id,
    status: row.status satisfies JobStatus,
    progressState: useRow ? { ...row.progressState } : last.progressState,
    progressSeq: useRow ? row.progressSeq : last.progressSeq,
    terminal,
  };
}
