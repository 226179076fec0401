import type { Clock } from '../../core/clock.js';
import type {
  ActorConfigRow,
  AttemptRow,
  EventKind,
  EventRow,
  JobRow,
  JobStatus,
  QueueConfigRow,
  QueueMode,
} from '../types.js';

/** A job whose status an operation changed, and the status it had before. */
export interface StatusChange {
  job: JobRow;
  from: JobStatus;
}

/** The in-memory backend's state, shared by the modules that implement its operations. */
export interface MemoryState {
  readonly clock: Clock;
  readonly jobs: Map<string, JobRow>;
  readonly attempts: () => AttemptRow[];
  readonly setAttempts: (rows: AttemptRow[]) => void;
  readonly events: () => EventRow[];
  readonly setEvents: (rows: EventRow[]) => void;
  readonly archive: Map<string, JobRow & { archivedAt: Date; expireAt: Date }>;
  readonly archivedAttempts: AttemptRow[];
  readonly actorConfig: Map<string, ActorConfigRow>;
  /** The `queues` rows: dispatch mode (absent = strict FIFO) and fleet-wide cap per queue. */
  readonly queues: Map<string, QueueConfigRow>;
  readonly queueModes: Map<string, QueueMode>;
  readonly workers: Map<string, { lastSeenAt: Date }>;
  event(jobId: string, kind: EventKind, detail: Record<string, unknown>): void;
  emitWake(): void;
  emitDone(ids: string[]): void;
  /** Tells the worker holding `jobId` that its cancel was requested. */
  emitCancel(jobId: string, workerId: string): void;
  /**
   * The batch trigger: every operation that changes job statuses reports the changes here, once,
   * after making them (as Postgres fires the row trigger after the statement's rows are written).
   */
  statusChanged(changes: readonly StatusChange[]): void;
  /** Announces jobs whose progress was written (the progress NOTIFY). */
  emitProgress?(ids: string[]): void;
}
