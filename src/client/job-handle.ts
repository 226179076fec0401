import type { AttemptRow, CancelResult, EventRow, JobRow, JobStatus } from '../backend/types.js';
import { JobFailed, JobNotFoundError, ResultUnavailable } from '../errors/job-errors.js';
import { toMsOrNull, type Duration } from '../core/duration.js';
import { validateSchema } from '../core/schema-validation.js';
import type { Schema } from '../core/schema-validation.js';
import type { TaskQ } from './taskq.js';
import type { ProgressEvent } from '../progress/progress-event.js';
import type { ProgressStreamOptions } from './progress-stream.js';
import { checkOptionsObject } from '../core/closest-name.js';

const WAIT_OPTION_KEYS: readonly string[] = ['timeout'];

/**
 * A reference to one job, typed by its actor's result. `row` is the last row observed (no round
 * trip); `status()` and `refresh()` read the database.
 */
export class JobHandle<R = unknown> {
  /** True when the enqueue deduplicated to an existing job (idempotency key or `uniqueFor`). */
  readonly wasExisting: boolean;
  private current: JobRow;

  constructor(
    private readonly client: TaskQ,
    row: JobRow,
    wasExisting: boolean,
    /** Result schema of the actor, when known (used by `wait()`). */
    readonly resultSchema: Schema<R> | null = null,
  ) {
    this.current = row;
    this.wasExisting = wasExisting;
  }

  /** The job id. */
  get jobId(): string {
    return this.current.id;
  }

  /** Actor name. */
  get actorName(): string {
    return this.current.actor;
  }

  /** Queue. */
  get queue(): string {
    return this.current.queue;
  }

  /** The last observed row (updated by `status()`, `refresh()` and `wait()`). */
  get row(): JobRow {
    return this.current;
  }

  /** Reads the current status. @throws JobNotFoundError when the job is gone. */
  async status(): Promise<JobStatus> {
    return (await this.refresh()).status;
  }

  /** Reads the current row. @throws JobNotFoundError when the job is gone. */
  async refresh(): Promise<JobRow> {
    const row = await this.client.getRow(this.current.id);
    if (!row) throw new JobNotFoundError(this.current.id);
    this.current = row;
    return row;
  }

  /** Attempt history, oldest first. */
  async attempts(): Promise<AttemptRow[]> {
    return this.client.backend.getAttempts(this.current.id);
  }

  /** Event history (state changes, cancel requests), oldest first. */
  async events(): Promise<EventRow[]> {
    return this.client.backend.getEvents(this.current.id);
  }

  /** Requests cancellation; see `TaskQ.cancel`. */
  async cancel(reason?: string): Promise<CancelResult> {
    return this.client.cancel(this.current.id, reason);
  }

  /**
   * Waits for the job to finish and returns its result, validated against the actor's result
   * schema. Wakes promptly on completion (NOTIFY), with polling as the fallback.
   * @throws JobFailed (with `row`) when it ended failed, cancelled, crashed or abandoned;
   *   ResultUnavailable when it succeeded but no result is stored (expired, or never returned while
   *   the actor declares a result schema); WaitTimeoutError after `timeout`; JobNotFoundError.
   */
  async wait(options: { timeout?: Duration } = {}): Promise<R> {
    checkOptionsObject(options, WAIT_OPTION_KEYS, 'wait.options', 'an option of wait()');
    const row = await this.client.waitForTerminal(
      this.current.id,
      toMsOrNull(options.timeout, 'wait.timeout'),
    );
    this.current = row;
    if (row.status !== 'succeeded') throw new JobFailed(row);
    if (row.result === null || row.result === undefined) {
      if (this.resultSchema)
        throw new ResultUnavailable(row, 'no result is stored (it expired, or the handler returned nothing)');
      return undefined as R;
    }
    if (this.resultSchema)
      return validateSchema(this.resultSchema, row.result, { actor: row.actor, what: 'result' });
    return row.result as R;
  }

  /**
   * Live progress of the job, until the event with `terminal: true` (the final state):
   *
   * ```ts
   * for await (const e of handle.progressStream()) console.log(e.seq, e.percent, e.status);
   * ```
   *
   * With Redis configured on the client (`TaskQ.open({ redisUrl })`) every `ctx.progress()` call
   * arrives through the job's pub/sub channel; without it (or while Redis is down) the row is read
   * every `pollInterval` (500 ms) and on the progress/done NOTIFY, and events are synthesised from
   * the differences. `seq` never decreases and no progress event is delivered twice; the last event
   * is built from the final row. A finished job yields only its terminal event. `break` releases
   * the subscriptions. Does not advance `row`.
   * @throws JobNotFoundError (on iteration) when the job does not exist; TaskQStateError when the
   *   client closes while iterating.
   */
  progressStream(options?: ProgressStreamOptions): AsyncIterableIterator<ProgressEvent> {
    return this.client.progressStream(this.current.id, options);
  }

  /** @internal Updates the observed row. */
  observe(row: JobRow): void {
    this.current = row;
  }
}
