import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';

import type { TaskQ } from '../client/taskq.js';
import type { JobRow } from '../backend/types.js';
import { TERMINAL_STATUSES } from '../backend/state-machine.js';

/** What the job page's live updates carry: status and progress, never the payload or result. */
export interface JobState {
  /** The job's id. */
  id: string;
  /** Its status. */
  status: JobRow['status'];
  /** Its attempt counter. */
  attempt: number;
  /** Its last reported progress. */
  progress: Record<string, unknown>;
  /** Sequence number of that report. */
  progressSeq: number;
  /** A cancel was requested. */
  cancelRequested: boolean;
}

/** The live-update view of a row. */
export function jobState(row: JobRow): JobState {
  return {
    id: row.id,
    status: row.status,
    attempt: row.attempt,
    progress: row.progressState,
    progressSeq: row.progressSeq,
    cancelRequested: row.cancelRequestedAt !== null,
  };
}

/** A comment line every so often keeps proxies from closing an idle stream. */
const KEEP_ALIVE_MS = 15_000;

/**
 * Counts the live streams served at once (`maxSseConnections`): a stream past the cap is refused
 * (the page then polls), so a crowd of open tabs cannot hold every database connection.
 */
export class StreamSlots {
  private used = 0;
  constructor(private readonly max: number) {}
  /** Takes a slot; false when all are in use. */
  tryAcquire(): boolean {
    if (this.used >= this.max) return false;
    this.used++;
    return true;
  }
  /** Gives a slot back. */
  release(): void {
    this.used = Math.max(0, this.used - 1);
  }
  /** Slots in use. */
  get inUse(): number {
    return this.used;
  }
}

/**
 * A server-sent event stream of one job's {@link JobState}: an event at once, then one per change
 * of status or progress, read from the database every `intervalMs`; it ends when the job is
 * terminal, gone, or `signal` aborts (the client went away). `onEnd` runs exactly once.
 */
export function jobStateStream(
  tq: TaskQ,
  jobId: string,
  intervalMs: number,
  signal: AbortSignal,
  onEnd: () => void,
): PassThrough {
  const out = new PassThrough();
  // A write racing the client's disconnect must not become an unhandled 'error'.
  out.on('error', () => undefined);
  const run = async (): Promise<void> => {
    let last = '';
    let lastWrite = Date.now();
    while (!signal.aborted) {
      const row = await tq.getRow(jobId);
      if (row === null) {
        out.write('event: gone\ndata: {}\n\n');
        return;
      }
      const state = JSON.stringify(jobState(row));
      if (state !== last) {
        out.write(`event: state\ndata: ${state}\n\n`);
        last = state;
        lastWrite = Date.now();
      } else if (Date.now() - lastWrite >= KEEP_ALIVE_MS) {
        out.write(': keep-alive\n\n');
        lastWrite = Date.now();
      }
      if (TERMINAL_STATUSES.has(row.status)) return;
      await sleep(intervalMs, undefined, { signal }).catch(() => undefined);
    }
  };
  run()
    .catch(() => out.write('event: error\ndata: {}\n\n'))
    .finally(() => {
      out.end();
      onEnd();
    });
  return out;
}
