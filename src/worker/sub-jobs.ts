import type { Attributes } from '@opentelemetry/api';

import type { ClaimedJob, EnqueueArgs, JobRow } from '../backend/types.js';
import { newJobRow } from '../backend/new-job-row.js';
import { checkActorRef, checkBatchItems, MAX_BATCH_SIZE, type EnqueueItem } from '../client/batch-items.js';
import { buildEnqueueArgs, MAX_TAGS } from '../client/enqueue-options.js';
import { JobHandle } from '../client/job-handle.js';
import { payloadJson, payloadJsons } from '../client/payload-json.js';
import type { ActorRef } from '../core/actor.js';
import type { ClientLike } from '../db/driver.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { PartialBatchError, SubJobsUnavailableError } from '../errors/sub-job-errors.js';
import { SPAN_ATTRIBUTES } from '../obs/tracing/span-attributes.js';
import { SubJobBuffer } from './sub-job-buffer.js';
import type { SubJobEnvironment } from './sub-job-environment.js';
import {
  checkBatchOptions,
  checkSubJobItems,
  splitEnqueueOptions,
  type SubJobBatchOptions,
  type SubJobEnqueueOptions,
  type SubJobMode,
} from './sub-job-options.js';

export type { SubJobBatchOptions, SubJobEnqueueOptions } from './sub-job-options.js';

/**
 * `ctx.jobs`: enqueue jobs from inside a handler. By default a child is buffered and written in the
 * same transaction as the parent's success, so it exists if and only if the parent succeeded; a
 * failed, retried, snoozed, cancelled or timed-out attempt leaves none. `autonomous: true` writes at
 * once on the worker's pool, `connection` at once in your transaction. See docs/sub-jobs.md.
 */
export interface SubJobEnqueuer {
  /**
   * Enqueues one child (payload typed by the actor). Payload and options are checked now: a bad
   * one throws here and buffers nothing. A buffered child's handle carries its job id, but the job
   * does not exist until the parent succeeds: `status()`, `refresh()` and `wait()` throw
   * `JobNotFoundError` before that, and `wait()` works once it exists.
   * @throws PayloadValidationError, PayloadTooLarge, InvalidArgumentError, SubJobsUnavailableError
   *   (the attempt ended); buffered: SingletonCollisionError, IdempotencyKeyConflict (against the
   *   attempt's other children); autonomous or with a connection: every error of `TaskQ.enqueue`
   */
  enqueue<P, R, I>(
    actor: ActorRef<P, R, I>,
    payload: NoInfer<I>,
    options?: SubJobEnqueueOptions,
  ): Promise<JobHandle<R>>;
  /**
   * Enqueues 1 to 1,000 children sharing one `metadata.batch_id`, every item checked before any is
   * buffered or written. Buffered (default) or with a connection: all or none. Autonomous: each item
   * is written on its own, every item is tried, and the failures are reported together.
   * @throws PartialBatchError (autonomous only), and the errors of {@link enqueue}
   */
  enqueueBatch(items: readonly EnqueueItem[], options?: SubJobBatchOptions): Promise<JobHandle<unknown>[]>;
  /** Children buffered so far by this attempt, to be written with its success. */
  readonly pendingCount: number;
}

/**
 * The `ctx.jobs` of one attempt, made the first time the handler reads `ctx.jobs`. Calls check
 * their input, then buffer the built arguments (or write them, autonomous or with a connection).
 * When the handler has returned, the runner {@link seal}s it — calls still in progress finish and
 * are included — and writes the buffer with the success; any other outcome {@link discard}s it.
 */
export class AttemptSubJobs implements SubJobEnqueuer {
  private buffer: SubJobBuffer | null = null;
  private state: 'open' | 'sealing' | 'closed' = 'open';
  private inProgress = 0;
  private whenQuiet: (() => void) | null = null;
  private parentTags: Promise<readonly string[]> | null = null;

  constructor(
    private readonly env: SubJobEnvironment,
    private readonly parent: ClaimedJob,
  ) {}

  get pendingCount(): number {
    return this.buffer?.args.length ?? 0;
  }

  enqueue<P, R, I>(
    actor: ActorRef<P, R, I>,
    payload: NoInfer<I>,
    options: SubJobEnqueueOptions = {},
  ): Promise<JobHandle<R>> {
    return this.track(() =>
      this.enqueueOne(actor as ActorRef<unknown, unknown>, payload, options),
    ) as Promise<JobHandle<R>>;
  }

  enqueueBatch(
    items: readonly EnqueueItem[],
    options: SubJobBatchOptions = {},
  ): Promise<JobHandle<unknown>[]> {
    return this.track(() => this.enqueueMany(items, options));
  }

  /**
   * The handler returned successfully: no new call is accepted; once the calls in progress have
   * finished, resolves with the children to write with the success (in call order).
   */
  async seal(): Promise<readonly EnqueueArgs[]> {
    this.state = 'sealing';
    if (this.inProgress > 0) await new Promise<void>((resolve) => (this.whenQuiet = resolve));
    this.state = 'closed';
    return this.buffer?.args ?? [];
  }

  /** The attempt ended without a success (or was given up): its children are dropped, unwritten. */
  discard(): void {
    this.state = 'closed';
    this.buffer = null;
  }

  /** The children were written with the success: their handles observe the rows they resolved to. */
  committed(rows: readonly JobRow[]): void {
    this.buffer?.committed(rows);
  }

  private async track<T>(call: () => Promise<T>): Promise<T> {
    this.checkOpen();
    this.inProgress++;
    try {
      return await call();
    } finally {
      if (--this.inProgress === 0 && this.whenQuiet !== null) {
        this.whenQuiet();
        this.whenQuiet = null;
      }
    }
  }

  private checkOpen(): void {
    if (this.state !== 'open')
      throw new SubJobsUnavailableError(
        `ctx.jobs of job ${this.parent.id} (attempt ${this.parent.attempt}) was used after the attempt ended: ` +
          'await every ctx.jobs call before the handler returns',
      );
  }

  private async enqueueOne(
    ref: ActorRef<unknown, unknown>,
    payload: unknown,
    options: SubJobEnqueueOptions,
  ): Promise<JobHandle<unknown>> {
    const field = 'ctx.jobs.enqueue';
    checkActorRef(ref, `${field}.actor`);
    const o = splitEnqueueOptions(options, field);
    const json = await payloadJson(ref, payload, 'payload', this.env.settings.payloadMaxBytes);
    const maxPending = await this.env.maxPendingOf(ref, o.maxPending);
    const inherited = o.inheritTags ? await this.inheritedTags() : [];
    const args = buildEnqueueArgs(ref, json, o.rest, {
      maxPending,
      idempotencyMaxBytes: this.env.settings.idempotencyKeyMaxBytes,
      field,
    });
    if (o.uniqueForMs !== undefined) args.uniqueForMs = o.uniqueForMs;
    if (o.uniqueStates !== undefined) args.uniqueStates = o.uniqueStates;
    args.tags = mergeTags(inherited, args.tags, `${field}.tags`);
    const attributes = { [SPAN_ATTRIBUTES.actor]: ref.name };
    const [handle] = await this.write([args], [ref], o.mode, field, attributes, true);
    return handle!;
  }

  private async enqueueMany(
    items: readonly EnqueueItem[],
    options: SubJobBatchOptions,
  ): Promise<JobHandle<unknown>[]> {
    const field = 'ctx.jobs.enqueueBatch';
    const { mode, inheritTags, batchOptions } = checkBatchOptions(options, field);
    checkSubJobItems(items);
    const { batchId, refs } = checkBatchItems(field, items, MAX_BATCH_SIZE, batchOptions);
    const jsons = await payloadJsons(refs, items, this.env.settings.payloadMaxBytes);
    const limits = new Map<string, number | null>();
    for (const ref of refs)
      if (!limits.has(ref.name)) limits.set(ref.name, await this.env.maxPendingOf(ref, undefined));
    const inherited = inheritTags ? await this.inheritedTags() : [];
    const args = items.map((item, i) => {
      const a = buildEnqueueArgs(refs[i]!, jsons[i]!, item.options ?? {}, {
        maxPending: limits.get(refs[i]!.name) ?? null,
        idempotencyMaxBytes: this.env.settings.idempotencyKeyMaxBytes,
        itemIndex: i,
        batchId,
      });
      a.tags = mergeTags(inherited, a.tags, `items[${i}].options.tags`);
      return a;
    });
    const attributes = { [SPAN_ATTRIBUTES.batchId]: batchId, [SPAN_ATTRIBUTES.batchCount]: args.length };
    return this.write(args, refs, mode, field, attributes, false);
  }

  /**
   * Buffers or writes one call's children (`single`: an `enqueue`, else an `enqueueBatch`), inside
   * its `send` span when tracing is on.
   */
  private write(
    args: EnqueueArgs[],
    refs: readonly ActorRef<unknown, unknown>[],
    mode: SubJobMode,
    field: string,
    attributes: Attributes,
    single: boolean,
  ): Promise<JobHandle<unknown>[]> {
    const run = (): Promise<JobHandle<unknown>[]> => {
      if (mode.kind === 'buffered') return Promise.resolve(this.bufferChildren(args, refs, field));
      if (mode.kind === 'connection') return this.writeOnConnection(args, refs, mode.connection, single);
      return this.writeAutonomous(args, refs, single);
    };
    const tracing = this.env.tracing;
    if (tracing === null) return run();
    return tracing.send(args, attributes, run, (span, handles) => {
      if (!single) return;
      span.setAttribute(SPAN_ATTRIBUTES.messageId, handles[0]!.jobId);
      if (handles[0]!.wasExisting) span.setAttribute(SPAN_ATTRIBUTES.existing, true);
    });
  }

  private bufferChildren(
    args: EnqueueArgs[],
    refs: readonly ActorRef<unknown, unknown>[],
    field: string,
  ): JobHandle<unknown>[] {
    // A call still checking its input when the handler returned (`sealing`) is included.
    if (this.state === 'closed') this.checkOpen();
    const now = new Date();
    const handles = args.map(
      (a, i) => new JobHandle(this.env.client, provisionalRow(a, now), false, refs[i]!.resultSchema),
    );
    (this.buffer ??= new SubJobBuffer()).add(args, handles, field);
    return handles;
  }

  private async writeOnConnection(
    args: EnqueueArgs[],
    refs: readonly ActorRef<unknown, unknown>[],
    connection: ClientLike,
    single: boolean,
  ): Promise<JobHandle<unknown>[]> {
    const backend = this.env.backend;
    const rows = single
      ? [await backend.enqueueWithConn(connection, args[0]!)]
      : await backend.enqueueBatch(args, { connection });
    return rows.map((row, i) => this.handleOf(row, args[i]!, refs[i]!));
  }

  /**
   * Writes each child on its own, on the pool. One child: its error is thrown as is. Several (a
   * batch): every child is tried, in order, and the failures are reported together.
   */
  private async writeAutonomous(
    args: EnqueueArgs[],
    refs: readonly ActorRef<unknown, unknown>[],
    single: boolean,
  ): Promise<JobHandle<unknown>[]> {
    const backend = this.env.backend;
    if (single) return [this.handleOf(await backend.enqueue(args[0]!), args[0]!, refs[0]!)];
    const handles: (JobHandle<unknown> | null)[] = [];
    const failedItems: { index: number; error: unknown }[] = [];
    for (let i = 0; i < args.length; i++) {
      try {
        handles.push(this.handleOf(await backend.enqueue(args[i]!), args[i]!, refs[i]!));
      } catch (error) {
        handles.push(null);
        failedItems.push({ index: i, error });
      }
    }
    if (failedItems.length > 0)
      throw new PartialBatchError({
        succeededCount: args.length - failedItems.length,
        failedItems,
        total: args.length,
        handles,
      });
    return handles as JobHandle<unknown>[];
  }

  private handleOf(row: JobRow, args: EnqueueArgs, ref: ActorRef<unknown, unknown>): JobHandle<unknown> {
    return new JobHandle(this.env.client, row, row.id !== args.id, ref.resultSchema);
  }

  /** The parent job's tags, read once per attempt on first need (a claim does not carry them). */
  private inheritedTags(): Promise<readonly string[]> {
    this.parentTags ??= this.env.backend.get(this.parent.id).then(
      (row) => row?.tags ?? [],
      (err: unknown) => {
        this.parentTags = null;
        throw err;
      },
    );
    return this.parentTags;
  }
}

/** The parent's tags, then the call's own that it does not already have. */
function mergeTags(inherited: readonly string[], own: string[], field: string): string[] {
  if (inherited.length === 0) return own;
  const out = [...inherited];
  const seen = new Set(inherited);
  for (const t of own) if (!seen.has(t)) out.push(t);
  if (out.length > MAX_TAGS)
    throw new InvalidArgumentError(
      field,
      own,
      `with the parent's ${inherited.length} inherited tags makes ${out.length} tags, more than ${MAX_TAGS}: pass fewer, or inheritTags: false`,
    );
  return out;
}

/**
 * The row a buffered child's handle starts with, until the parent's success writes it: what the
 * caller asked for, `pending` (or `scheduled` when it runs later), times from this process's clock.
 */
function provisionalRow(a: EnqueueArgs, now: Date): JobRow {
  const runAt = a.scheduledAt ?? new Date(now.getTime() + (a.scheduledDelayMs ?? 0));
  return newJobRow(a, {
    status: runAt.getTime() > now.getTime() ? 'scheduled' : 'pending',
    createdAt: now,
    scheduledAt: runAt,
    scheduleToClose: a.scheduleToClose,
  });
}
