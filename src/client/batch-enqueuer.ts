import type { Backend } from '../backend/backend.js';
import type { BatchWrite, BatchWriteResult } from '../backend/batch-types.js';
import type { EnqueueArgs, JobRow } from '../backend/types.js';
import type { ActorRef } from '../core/actor.js';
import type { Schema } from '../core/schema-validation.js';
import type { Logger } from '../obs/logger.js';
import type { ClientMetrics } from '../obs/metrics/client-metrics.js';
import type { EnqueueTracing } from '../obs/tracing/enqueue-tracing.js';
import { SPAN_ATTRIBUTES } from '../obs/tracing/span-attributes.js';
import type { ActorCapacityCache } from './capacity-cache.js';
import {
  checkBatchItems,
  FAST_BATCH_OPTION_KEYS,
  hasBatchExtras,
  MAX_BATCH_SIZE,
  MAX_FAST_BATCH_SIZE,
  type BatchOptions,
  type EnqueueItem,
  type FastBatchOptions,
} from './batch-items.js';
import { BatchHandle } from './batch-handle.js';
import { buildEnqueueArgs } from './enqueue-options.js';
import type { JobHandle } from './job-handle.js';
import { payloadJson, payloadJsons } from './payload-json.js';

/** What the batch enqueues need from the client that owns them. */
export interface BatchEnqueuerDeps {
  backend: Backend;
  logger: Logger;
  capacity: ActorCapacityCache;
  payloadMaxBytes: number;
  idempotencyMaxBytes: number;
  /** Null with `otelEnabled: false`. */
  tracing: EnqueueTracing | null;
  /** Null with `otelEnabled: false`. */
  metrics: ClientMetrics | null;
  /** A handle on a written row (`existing`: the row is an earlier job an item deduplicated to). */
  handleOf(row: JobRow, existing: boolean, resultSchema: Schema<unknown> | null): JobHandle<unknown>;
  /** Warns once per actor about a `uniqueFor` without an identity key. */
  warnUniqueFor(ref: ActorRef<unknown, unknown>, args: EnqueueArgs): void;
}

/** A batch's items validated and built, ready to write. */
export interface PreparedBatch {
  batchId: string;
  refs: ActorRef<unknown, unknown>[];
  args: EnqueueArgs[];
}

/**
 * The client's batch enqueues: `enqueueBatch` (with or without a batch row), `enqueueBatchFast`,
 * and the validation and argument building they share with the streaming enqueue.
 */
export class BatchEnqueuer {
  /** @param d what the enqueues need from the client (the streaming enqueue reads it too) */
  constructor(readonly d: BatchEnqueuerDeps) {}

  /** See `TaskQ.enqueueBatch`. */
  async enqueueBatch(items: readonly EnqueueItem[], options: BatchOptions): Promise<BatchHandle> {
    const { batchId, refs, args } = await this.prepare('enqueueBatch', items, MAX_BATCH_SIZE, options);
    const connection = options.connection ? { connection: options.connection } : {};
    if (!hasBatchExtras(options)) {
      const write = (): Promise<JobRow[]> =>
        this.refusals(this.d.backend.enqueueBatch(args, connection), 'batch');
      const rows = await this.sendBatch(args, batchId, write);
      return new BatchHandle(this.d.backend, batchId, this.handles(rows, args, refs), items.length);
    }
    const finalizer = await this.finalizerArgs('enqueueBatch', options);
    const w: BatchWrite = {
      batchId,
      create: {
        queue: args[0]!.queue,
        failureThreshold: options.failurePolicy?.failureThreshold ?? null,
        finalizer: finalizer?.args ?? null,
      },
      children: args,
      seal: true,
    };
    const write = (): Promise<BatchWriteResult> =>
      this.refusals(this.d.backend.writeBatch(w, connection), 'batch');
    const out = await this.sendBatch(args, batchId, write);
    this.d.logger.debug(
      { batchId, size: items.length, finalizerJobId: out.finalizer?.id ?? null },
      'batch-enqueued',
    );
    const handles = this.handles(out.rows, args, refs);
    const finalizerHandle =
      out.finalizer && finalizer
        ? this.d.handleOf(out.finalizer, out.finalizer.id !== finalizer.args.id, finalizer.ref.resultSchema)
        : null;
    if (finalizerHandle) handles.push(finalizerHandle);
    return new BatchHandle(this.d.backend, batchId, handles, items.length, finalizerHandle, out.batch);
  }

  /** See `TaskQ.enqueueBatchFast`. */
  async enqueueBatchFast(items: readonly EnqueueItem[], options: FastBatchOptions): Promise<number> {
    const { batchId, args } = await this.prepare(
      'enqueueBatchFast',
      items,
      MAX_FAST_BATCH_SIZE,
      options,
      FAST_BATCH_OPTION_KEYS,
    );
    const write = (): Promise<number> =>
      this.refusals(
        this.d.backend.enqueueBatchFast(args, options.connection ? { connection: options.connection } : {}),
        'batch_fast',
      );
    const count = await this.sendBatch(args, batchId, write);
    this.d.logger.debug({ batchId, count }, 'batch-fast-enqueued');
    return count;
  }

  /**
   * Validates a batch (count, options, items, payloads) before any I/O and builds each item's
   * arguments, stamped with the batch id. `indexBase`: the global index of `items[0]` (a streaming
   * enqueue's chunk), used in error messages.
   */
  async prepare(
    what: string,
    items: readonly EnqueueItem[],
    max: number,
    options: BatchOptions,
    optionKeys?: readonly string[],
    indexBase = 0,
  ): Promise<PreparedBatch> {
    const { batchId, refs } = checkBatchItems(what, items, max, options, optionKeys, indexBase);
    const jsons = await payloadJsons(refs, items, this.d.payloadMaxBytes, indexBase);
    const limits = await this.limits(refs);
    const args = items.map((item, i) =>
      buildEnqueueArgs(refs[i]!, jsons[i]!, item.options ?? {}, {
        maxPending: limits.get(refs[i]!.name) ?? null,
        idempotencyMaxBytes: this.d.idempotencyMaxBytes,
        itemIndex: indexBase + i,
        batchId,
      }),
    );
    for (let i = 0; i < refs.length; i++) this.d.warnUniqueFor(refs[i]!, args[i]!);
    return { batchId, refs, args };
  }

  /** The finalizer's validated arguments (not stamped with the batch id: it is not a child). */
  async finalizerArgs(
    what: string,
    options: BatchOptions,
  ): Promise<{ ref: ActorRef<unknown, unknown>; args: EnqueueArgs } | null> {
    const f = options.finalizer;
    if (!f) return null;
    const ref = f.actor as ActorRef<unknown, unknown>;
    const json = await payloadJson(ref, f.payload, `${what}.finalizer.payload`, this.d.payloadMaxBytes);
    const maxPending = await this.d.capacity.effectiveMaxPending(ref.name, ref.maxPending);
    const args = buildEnqueueArgs(ref, json, f.options ?? {}, {
      maxPending,
      idempotencyMaxBytes: this.d.idempotencyMaxBytes,
    });
    return { ref, args };
  }

  /** The effective `maxPending` of each actor of a batch (null: none). */
  async limits(refs: readonly ActorRef<unknown, unknown>[]): Promise<Map<string, number | null>> {
    const limits = new Map<string, number | null>();
    for (const ref of refs)
      if (!limits.has(ref.name))
        limits.set(ref.name, await this.d.capacity.effectiveMaxPending(ref.name, ref.maxPending));
    return limits;
  }

  /** One handle per written row, in item order. */
  handles(
    rows: readonly JobRow[],
    args: readonly EnqueueArgs[],
    refs: readonly ActorRef<unknown, unknown>[],
  ): JobHandle<unknown>[] {
    return rows.map((row, i) => this.d.handleOf(row, row.id !== args[i]!.id, refs[i]!.resultSchema));
  }

  /** `write`, with a `maxPending` refusal counted (`taskq.backpressure.errors`) on its way out. */
  refusals<T>(write: Promise<T>, kind: 'single' | 'batch' | 'batch_fast'): Promise<T> {
    const m = this.d.metrics;
    if (m === null) return write;
    return write.catch((err: unknown) => {
      m.refused(err, kind);
      throw err;
    });
  }

  /** Runs a batch's write, inside its `send` span when tracing is on. */
  sendBatch<T>(args: EnqueueArgs[], batchId: string, write: () => Promise<T>): Promise<T> {
    if (this.d.tracing === null) return write();
    return this.d.tracing.send(
      args,
      { [SPAN_ATTRIBUTES.batchId]: batchId, [SPAN_ATTRIBUTES.batchCount]: args.length },
      write,
      () => undefined,
    );
  }
}
