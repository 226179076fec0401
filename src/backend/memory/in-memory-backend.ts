import type { Clock } from '../../clock.js';
import { SystemClock } from '../../clock.js';
import type { ClientLike } from '../../db/driver.js';
import { MaxPendingExceededError, SingletonCollisionError } from '../../errors/backpressure-errors.js';
import { BACKEND_PROTOCOL_VERSION, type Backend, type JobPage } from '../backend.js';
import { encodeCursor, type CursorKey } from '../cursor.js';
import type { NormalizedJobFilter } from '../job-filter.js';
import { ACTIVE_STATUSES, RETRYABLE_TERMINAL_STATUSES } from '../state-machine.js';
import type {
  ActorConfigRow,
  AttemptRow,
  EnqueueArgs,
  EventKind,
  EventRow,
  JobRow,
  JobStatus,
} from '../types.js';
import { MemoryTransaction } from './memory-transaction.js';

/** Options of {@link InMemoryBackend}. */
export interface InMemoryBackendOptions {
  /** Time source for every time predicate. Default: the system clock. */
  clock?: Clock;
}

const us = (d: Date): number => d.getTime() * 1000;
const clone = <T>(v: T): T => structuredClone(v);

/**
 * The whole Backend contract in process memory, for users' own tests (with a `FakeClock` they
 * control). It passes the same contract suite as the Postgres backend. Single-threaded by design:
 * do not share one instance between worker threads.
 */
export class InMemoryBackend implements Backend {
  readonly protocolVersion = BACKEND_PROTOCOL_VERSION;
  readonly kind = 'memory' as const;
  readonly clock: Clock;
  private readonly jobs = new Map<string, JobRow>();
  private readonly attempts: AttemptRow[] = [];
  private readonly events: EventRow[] = [];
  private nextEventId = 1;
  /** Stored actor configuration (`actor_config` rows). */
  readonly actorConfig = new Map<string, ActorConfigRow>();
  private readonly txRows = new WeakMap<MemoryTransaction, JobRow[]>();

  constructor(options: InMemoryBackendOptions = {}) {
    this.clock = options.clock ?? new SystemClock();
  }

  /** Starts a simulated transaction for `enqueueWithConn` (commit/rollback like a real one). */
  beginTransaction(): MemoryTransaction {
    return new MemoryTransaction();
  }

  private event(jobId: string, kind: EventKind, detail: Record<string, unknown>): void {
    this.events.push({
      eventId: String(this.nextEventId++),
      jobId,
      occurredAt: this.clock.now(),
      kind,
      detail,
    });
  }

  private visibleJobs(extra: readonly JobRow[]): JobRow[] {
    return extra.length > 0 ? [...this.jobs.values(), ...extra] : [...this.jobs.values()];
  }

  private findByKey(rows: Iterable<JobRow>, scope: string, key: string): JobRow | undefined {
    for (const r of rows) if (r.idempotencyKey === key && r.idempotencyScope === scope) return r;
    return undefined;
  }

  private buildRow(a: EnqueueArgs, now: Date): JobRow {
    const nowMs = now.getTime();
    const runAt = a.scheduledAt !== null ? a.scheduledAt.getTime() : nowMs + (a.scheduledDelayMs ?? 0);
    const due = runAt > nowMs;
    let deadline = a.scheduleToClose;
    if (a.scheduleToCloseIntervalMs !== null) {
      const byBudget = new Date(nowMs + a.scheduleToCloseIntervalMs);
      deadline = deadline === null || byBudget < deadline ? byBudget : deadline;
    }
    return {
      id: a.id,
      actor: a.actor,
      queue: a.queue,
      identityKey: a.identityKey,
      fairnessKey: a.fairnessKey,
      payload: JSON.parse(a.payloadJson) as unknown,
      payloadSchemaVer: a.payloadSchemaVer,
      status: due ? 'scheduled' : 'pending',
      priority: a.priority,
      attempt: 0,
      maxAttempts: a.maxAttempts,
      retryKind: a.retryKind,
      scheduleToClose: deadline,
      startToCloseMs: a.startToCloseMs,
      heartbeatTimeoutMs: a.heartbeatTimeoutMs,
      createdAt: now,
      scheduledAt: due ? new Date(runAt) : now,
      startedAt: null,
      finishedAt: null,
      lastHeartbeatAt: null,
      lockedByWorker: null,
      lockExpiresAt: null,
      cancelRequestedAt: null,
      cancelPhase: 0,
      errorClass: null,
      errorMessage: null,
      errorTraceback: null,
      progressState: {},
      progressSeq: 0,
      result: null,
      resultSizeBytes: null,
      resultExpiresAt: null,
      idempotencyKey: a.idempotencyKey,
      idempotencyScope: a.idempotencyScope,
      traceId: a.traceId,
      spanId: a.spanId,
      metadata: clone(a.metadata),
      tags: [...a.tags],
    };
  }

  private isActiveSingleton(r: JobRow): boolean {
    return r.metadata.singleton === true && ACTIVE_STATUSES.has(r.status);
  }

  /** Applies the enqueue gates against `rows`; returns the row to return, or the new row to insert. */
  private gateAndBuild(a: EnqueueArgs, rows: JobRow[]): { existing: JobRow } | { insert: JobRow } {
    const now = this.clock.now();
    if (a.uniqueForMs !== null && a.identityKey !== null) {
      const since = now.getTime() - a.uniqueForMs;
      const hit = rows
        .filter(
          (r) =>
            r.actor === a.actor &&
            r.identityKey === a.identityKey &&
            a.uniqueStates.includes(r.status) &&
            r.createdAt.getTime() >= since,
        )
        .sort((x, y) => y.createdAt.getTime() - x.createdAt.getTime())[0];
      if (hit) return { existing: hit };
    }
    if (a.singleton) {
      const blocking = rows.find((r) => r.actor === a.actor && ACTIVE_STATUSES.has(r.status));
      if (blocking) {
        const retryAfter = blocking.scheduleToClose
          ? Math.max(0, blocking.scheduleToClose.getTime() - Date.now())
          : null;
        throw new SingletonCollisionError(a.actor, blocking.id, retryAfter);
      }
    }
    if (a.maxPending !== null) {
      const n = rows.filter(
        (r) => r.actor === a.actor && (r.status === 'pending' || r.status === 'scheduled'),
      ).length;
      if (n >= a.maxPending) throw new MaxPendingExceededError(a.actor, n, a.maxPending);
    }
    if (a.idempotencyKey !== null) {
      const dup = this.findByKey(rows, a.idempotencyScope, a.idempotencyKey);
      if (dup) return { existing: dup };
    }
    const row = this.buildRow(a, now);
    if (
      row.metadata.singleton === true &&
      rows.some((r) => r.actor === row.actor && this.isActiveSingleton(r))
    ) {
      throw new SingletonCollisionError(a.actor);
    }
    return { insert: row };
  }

  async enqueue(args: EnqueueArgs): Promise<JobRow> {
    const out = this.gateAndBuild(args, [...this.jobs.values()]);
    if ('existing' in out) return clone(out.existing);
    this.jobs.set(out.insert.id, out.insert);
    return clone(out.insert);
  }

  async enqueueWithConn(conn: ClientLike, args: EnqueueArgs): Promise<JobRow> {
    if (!(conn instanceof MemoryTransaction)) {
      throw new TypeError(
        'InMemoryBackend.enqueueWithConn needs a MemoryTransaction from backend.beginTransaction()',
      );
    }
    const buffered = this.txRows.get(conn) ?? [];
    const out = this.gateAndBuild(args, this.visibleJobs(buffered));
    if ('existing' in out) return clone(out.existing);
    const row = out.insert;
    buffered.push(row);
    this.txRows.set(conn, buffered);
    conn.defer(() => {
      // A row committed meanwhile under the same key wins, as the unique index would decide.
      if (
        row.idempotencyKey !== null &&
        this.findByKey(this.jobs.values(), row.idempotencyScope, row.idempotencyKey)
      )
        return;
      this.jobs.set(row.id, row);
    });
    return clone(row);
  }

  async enqueueBatch(
    list: readonly EnqueueArgs[],
    options: { connection?: ClientLike } = {},
  ): Promise<JobRow[]> {
    if (options.connection !== undefined && !(options.connection instanceof MemoryTransaction)) {
      throw new TypeError(
        'InMemoryBackend.enqueueBatch needs a MemoryTransaction from backend.beginTransaction()',
      );
    }
    const tx = options.connection as MemoryTransaction | undefined;
    const staged: JobRow[] = [];
    const base = this.visibleJobs(tx ? (this.txRows.get(tx) ?? []) : []);
    const now = this.clock.now();
    const out: JobRow[] = [];
    for (const a of list) {
      const dup =
        a.idempotencyKey !== null
          ? this.findByKey([...base, ...staged], a.idempotencyScope, a.idempotencyKey)
          : undefined;
      if (dup) {
        out.push(dup);
        continue;
      }
      const row = this.buildRow(a, now);
      if (
        row.metadata.singleton === true &&
        [...base, ...staged].some((r) => r.actor === row.actor && this.isActiveSingleton(r))
      ) {
        throw new SingletonCollisionError(row.actor);
      }
      staged.push(row);
      out.push(row);
    }
    if (tx) {
      this.txRows.set(tx, [...(this.txRows.get(tx) ?? []), ...staged]);
      tx.defer(() => {
        for (const r of staged) this.jobs.set(r.id, r);
      });
    } else {
      for (const r of staged) this.jobs.set(r.id, r);
    }
    return out.map(clone);
  }

  async get(jobId: string): Promise<JobRow | null> {
    const r = this.jobs.get(jobId.toLowerCase());
    return r ? clone(r) : null;
  }

  private matches(r: JobRow, f: NormalizedJobFilter): boolean {
    if (f.queue !== null && r.queue !== f.queue) return false;
    if (f.actor !== null && r.actor !== f.actor) return false;
    if (f.identityKey !== null && r.identityKey !== f.identityKey) return false;
    if (f.batchId !== null && r.metadata.batch_id !== f.batchId) return false;
    if (f.tags.length > 0 && !f.tags.every((t) => r.tags.includes(t))) return false;
    if (f.statuses !== null && !f.statuses.includes(r.status)) return false;
    return true;
  }

  private static compare(order: NormalizedJobFilter['orderBy'], a: JobRow, b: JobRow): number {
    const byId = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0);
    switch (order) {
      case 'scheduled_at_asc':
        return b.priority - a.priority || us(a.scheduledAt) - us(b.scheduledAt) || byId(a.id, b.id);
      case 'created_at_desc':
        return us(b.createdAt) - us(a.createdAt) || byId(b.id, a.id);
      case 'finished_at_desc': {
        if (a.finishedAt === null && b.finishedAt !== null) return 1;
        if (a.finishedAt !== null && b.finishedAt === null) return -1;
        const f = (b.finishedAt ? us(b.finishedAt) : 0) - (a.finishedAt ? us(a.finishedAt) : 0);
        return f || byId(b.id, a.id);
      }
    }
  }

  private static keyOf(order: NormalizedJobFilter['orderBy'], r: JobRow): CursorKey {
    switch (order) {
      case 'scheduled_at_asc':
        return { order, priority: r.priority, scheduledAtUs: us(r.scheduledAt), id: r.id };
      case 'created_at_desc':
        return { order, createdAtUs: us(r.createdAt), id: r.id };
      case 'finished_at_desc':
        return { order, finishedAtUs: r.finishedAt ? us(r.finishedAt) : null, id: r.id };
    }
  }

  private static after(r: JobRow, k: CursorKey): boolean {
    switch (k.order) {
      case 'scheduled_at_asc':
        return (
          r.priority < k.priority ||
          (r.priority === k.priority &&
            (us(r.scheduledAt) > k.scheduledAtUs || (us(r.scheduledAt) === k.scheduledAtUs && r.id > k.id)))
        );
      case 'created_at_desc':
        return us(r.createdAt) < k.createdAtUs || (us(r.createdAt) === k.createdAtUs && r.id < k.id);
      case 'finished_at_desc':
        if (k.finishedAtUs === null) return r.finishedAt === null && r.id < k.id;
        if (r.finishedAt === null) return true;
        return us(r.finishedAt) < k.finishedAtUs || (us(r.finishedAt) === k.finishedAtUs && r.id < k.id);
    }
  }

  async listJobs(filter: NormalizedJobFilter): Promise<JobPage> {
    if (filter.limit === 0) return { jobs: [], nextCursor: null };
    const rows = [...this.jobs.values()]
      .filter(
        (r) => this.matches(r, filter) && (filter.after === null || InMemoryBackend.after(r, filter.after)),
      )
      .sort((a, b) => InMemoryBackend.compare(filter.orderBy, a, b));
    const page = rows.slice(0, filter.limit);
    const last = page[page.length - 1];
    return {
      jobs: page.map(clone),
      nextCursor:
        rows.length > filter.limit && last ? encodeCursor(InMemoryBackend.keyOf(filter.orderBy, last)) : null,
    };
  }

  async countPendingJobs(actors: readonly string[]): Promise<Map<string, number>> {
    const wanted = new Set(actors);
    const out = new Map<string, number>();
    for (const r of this.jobs.values()) {
      if (wanted.has(r.actor) && (r.status === 'pending' || r.status === 'scheduled'))
        out.set(r.actor, (out.get(r.actor) ?? 0) + 1);
    }
    return out;
  }

  async countActiveJobs(queues: readonly string[]): Promise<number> {
    const wanted = new Set(queues);
    let n = 0;
    for (const r of this.jobs.values()) if (wanted.has(r.queue) && ACTIVE_STATUSES.has(r.status)) n++;
    return n;
  }

  async getActorMaxPending(): Promise<Map<string, number | null>> {
    return new Map([...this.actorConfig.values()].map((c) => [c.actor, c.maxPending]));
  }

  async writeCancelRequest(jobId: string, reason: string | null): Promise<boolean> {
    const r = this.jobs.get(jobId.toLowerCase());
    if (!r) return false;
    const now = this.clock.now();
    if (r.status === 'pending' || r.status === 'scheduled') {
      const from: JobStatus = r.status;
      Object.assign(r, {
        status: 'cancelled',
        finishedAt: now,
        cancelRequestedAt: now,
        errorClass: 'CancelRequested',
        errorMessage: reason ?? 'cancelled by request',
      } satisfies Partial<JobRow>);
      this.event(r.id, 'state_change', {
        from_state: from,
        to_state: 'cancelled',
        reason: 'cancel_requested',
        message: reason,
      });
      return true;
    }
    if (r.status === 'running' && r.cancelRequestedAt === null) {
      r.cancelRequestedAt = now;
      r.cancelPhase = 1;
      this.event(r.id, 'cancel_request', { phase: 1, message: reason, worker_id: r.lockedByWorker });
      return true;
    }
    return false;
  }

  async retryJob(jobId: string): Promise<boolean> {
    const r = this.jobs.get(jobId.toLowerCase());
    if (!r || !RETRYABLE_TERMINAL_STATUSES.has(r.status)) return false;
    if (
      r.metadata.singleton === true &&
      [...this.jobs.values()].some((o) => o.id !== r.id && o.actor === r.actor && this.isActiveSingleton(o))
    ) {
      throw new SingletonCollisionError(r.actor);
    }
    const from = r.status;
    Object.assign(r, {
      status: 'pending',
      attempt: 0,
      scheduledAt: this.clock.now(),
      startedAt: null,
      finishedAt: null,
      lastHeartbeatAt: null,
      lockedByWorker: null,
      lockExpiresAt: null,
      cancelRequestedAt: null,
      cancelPhase: 0,
      errorClass: null,
      errorMessage: null,
      errorTraceback: null,
      result: null,
      resultSizeBytes: null,
      resultExpiresAt: null,
    } satisfies Partial<JobRow>);
    this.event(r.id, 'state_change', { from_state: from, to_state: 'pending', reason: 'admin_retry' });
    return true;
  }

  async writeAttempt(a: AttemptRow): Promise<void> {
    if (!this.jobs.has(a.jobId)) throw new Error(`job ${a.jobId} does not exist (foreign key)`);
    this.attempts.push(clone(a));
  }

  async getAttempts(jobId: string): Promise<AttemptRow[]> {
    return this.attempts.filter((a) => a.jobId === jobId).map(clone);
  }

  async getEvents(jobId: string): Promise<EventRow[]> {
    return this.events.filter((e) => e.jobId === jobId).map(clone);
  }

  async close(): Promise<void> {}
}
