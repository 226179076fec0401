import type { AttemptRow, CancelResult, EventRow, JobRow, JobStatus } from '../backend/types.js';
import { JobNotFoundError } from '../errors/job-errors.js';
import type { Schema } from '../schema-validation.js';
import type { JobsClient } from './jobs-client.js';

/**
 * A reference to one job, typed by its actor's result. `row` is the last row observed (no round
 * trip); `status()` and `refresh()` read the database.
 */
export class JobHandle<R = unknown> {
  /** True when the enqueue deduplicated to an existing job (idempotency key or `uniqueFor`). */
  readonly wasExisting: boolean;
  private current: JobRow;

  constructor(
    private readonly client: JobsClient,
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

  /** Requests cancellation; see `JobsClient.cancel`. */
  async cancel(reason?: string): Promise<CancelResult> {
    return this.client.cancel(this.current.id, reason);
  }

  /** @internal Updates the observed row. */
  observe(row: JobRow): void {
    this.current = row;
  }
}
