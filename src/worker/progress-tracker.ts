import type { Backend } from '../backend/backend.js';
import type { ClaimedJob } from '../backend/types.js';
import type { ProgressSnapshot } from '../backend/worker-types.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { ProgressTooLarge } from '../errors/progress-errors.js';
import type { Logger } from '../obs/logger.js';
import type { ProgressPublisher, ProgressUpdate } from '../progress/progress-event.js';
import { checkedJsonText } from '../core/json-text.js';
import { checkNoNul } from '../core/text-checks.js';
import { LoopService } from './loop-service.js';
import { checkKnownKeys } from '../core/closest-name.js';

const PROGRESS_KEYS: readonly string[] = ['step', 'percent', 'detail', 'data'];

interface Tracked {
  row: ClaimedJob;
  seq: number;
  state: Record<string, unknown>;
  dirty: boolean;
  /** Monotonic time of the last heartbeat or progress report. */
  lastBeat: number;
  heartbeatDetailsJson: string | null;
}

/**
 * Progress and heartbeats of the jobs this worker runs. `report()` merges an update into the job's
 * state in memory (last writer wins per field) with a strictly increasing `seq`, never blocking on
 * the network; the {@link ProgressFlusher} writes dirty jobs to Postgres every
 * `progressCoalesceInterval`, and a publisher (Redis) gets each event at once, fire-and-forget.
 */
export class ProgressTracker {
  private readonly jobs = new Map<string, Tracked>();

  constructor(
    private readonly workerId: string,
    private readonly dataMaxBytes: number,
    private readonly logger: Logger,
    private readonly publisher: ProgressPublisher | null = null,
  ) {}

  /** Starts tracking a job (its stored seq is the base). */
  begin(row: ClaimedJob): void {
    this.jobs.set(row.id, {
      row,
      seq: row.progressSeq,
      // Not copied: `report` never changes a state in place (it replaces it with a merged copy),
      // and most jobs never report, so a copy here was an object per job for nothing.
      state: row.progressState,
      dirty: false,
      lastBeat: performance.now(),
      heartbeatDetailsJson: null,
    });
  }

  /** Stops tracking; returns the last progress (for the terminal write) when any was reported. */
  end(jobId: string): { progress: ProgressSnapshot | null; heartbeatDetailsJson: string | null } {
    const t = this.jobs.get(jobId);
    this.jobs.delete(jobId);
    if (!t) return { progress: null, heartbeatDetailsJson: null };
    return {
      progress: t.seq > t.row.progressSeq ? { seq: t.seq, state: t.state } : null,
      heartbeatDetailsJson: t.heartbeatDetailsJson,
    };
  }

  /** Last progress of a job still tracked (without ending it). */
  snapshot(jobId: string): ProgressSnapshot | null {
    const t = this.jobs.get(jobId);
    return t && t.seq > t.row.progressSeq ? { seq: t.seq, state: t.state } : null;
  }

  /** Milliseconds since the job's last heartbeat or progress report. */
  sinceLastBeat(jobId: string): number {
    const t = this.jobs.get(jobId);
    return t ? performance.now() - t.lastBeat : 0;
  }

  /** `ctx.heartbeat(details)`: proves liveness; details (JSON) are kept for the next attempt. */
  heartbeat(jobId: string, details?: unknown): void {
    const t = this.jobs.get(jobId);
    if (!t) return;
    t.lastBeat = performance.now();
    if (details !== undefined) {
      const json = checkedJsonText(details, 'ctx.heartbeat.details');
      if (Buffer.byteLength(json, 'utf8') > this.dataMaxBytes)
        throw new ProgressTooLarge(this.dataMaxBytes, Buffer.byteLength(json, 'utf8'));
      t.heartbeatDetailsJson = json;
    }
  }

  /** Heartbeat details to persist with the lease renewal. */
  heartbeatDetails(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [id, t] of this.jobs) if (t.heartbeatDetailsJson !== null) out.set(id, t.heartbeatDetailsJson);
    return out;
  }

  /** `ctx.progress(update)`: validated, merged, sequenced; counts as a heartbeat. */
  report(jobId: string, update: ProgressUpdate): void {
    const t = this.jobs.get(jobId);
    if (!t) return;
    if (update === null || typeof update !== 'object')
      throw new InvalidArgumentError('ctx.progress', update, 'must be an object');
    // `precent` for `percent` would otherwise report nothing and say nothing.
    checkKnownKeys(
      update,
      PROGRESS_KEYS,
      'ctx.progress',
      'a field of a progress update ({ step?, percent?, detail?, data? })',
    );
    const next: Record<string, unknown> = { ...t.state };
    if (update.step !== undefined) {
      if (typeof update.step !== 'string')
        throw new InvalidArgumentError('ctx.progress.step', update.step, 'must be a string');
      next.step = checkNoNul(update.step, 'ctx.progress.step');
    }
    if (update.detail !== undefined) {
      if (typeof update.detail !== 'string')
        throw new InvalidArgumentError('ctx.progress.detail', update.detail, 'must be a string');
      next.detail = checkNoNul(update.detail, 'ctx.progress.detail');
    }
    if (update.percent !== undefined) {
      if (typeof update.percent !== 'number' || !(update.percent >= 0 && update.percent <= 100)) {
        throw new InvalidArgumentError(
          'ctx.progress.percent',
          update.percent,
          'must be a number from 0 to 100',
        );
      }
      next.percent = update.percent;
    }
    if (update.data !== undefined) {
      const json = checkedJsonText(update.data, 'ctx.progress.data');
      const bytes = Buffer.byteLength(json, 'utf8');
      if (bytes > this.dataMaxBytes) throw new ProgressTooLarge(this.dataMaxBytes, bytes);
      next.data = JSON.parse(json) as unknown;
    }
    t.state = next;
    t.seq += 1;
    t.dirty = true;
    t.lastBeat = performance.now();
    if (this.publisher) {
      try {
        this.publisher.publish({
          v: 1,
          kind: 'progress',
          jobId,
          actor: t.row.actor,
          ts: new Date().toISOString(),
          seq: t.seq,
          status: 'running',
          ...(next as ProgressUpdate),
          terminal: false,
        });
      } catch (err) {
        this.logger.warn({ err, jobId }, 'progress-publish-failed');
      }
    }
  }

  /** Dirty jobs to flush; marks them clean (a failed flush re-marks them). */
  takeDirty(): { jobId: string; seq: number; state: Record<string, unknown> }[] {
    const out: { jobId: string; seq: number; state: Record<string, unknown> }[] = [];
    for (const [jobId, t] of this.jobs) {
      if (!t.dirty) continue;
      t.dirty = false;
      out.push({ jobId, seq: t.seq, state: t.state });
    }
    return out;
  }

  /** Marks jobs dirty again after a failed flush. */
  remark(jobIds: readonly string[]): void {
    for (const id of jobIds) {
      const t = this.jobs.get(id);
      if (t) t.dirty = true;
    }
  }

  /** The worker id (for the flusher). */
  get owner(): string {
    return this.workerId;
  }
}

/** Writes coalesced progress every `progressCoalesceInterval` (one statement for all dirty jobs). */
export class ProgressFlusher extends LoopService {
  constructor(
    private readonly backend: Backend,
    private readonly tracker: ProgressTracker,
    private readonly periodMs: number,
    logger: Logger,
  ) {
    super('progress-flusher', logger);
  }

  protected intervalMs(): number {
    return this.periodMs;
  }

  async runOnce(): Promise<number> {
    const dirty = this.tracker.takeDirty();
    if (dirty.length === 0) return 0;
    try {
      return await this.backend.flushProgress(this.tracker.owner, dirty);
    } catch (err) {
      this.tracker.remark(dirty.map((d) => d.jobId));
      throw err;
    }
  }
}
