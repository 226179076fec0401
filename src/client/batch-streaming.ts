import type { BatchRow, BatchWrite, BatchWriteResult } from '../backend/batch-types.js';
import type { EnqueueArgs } from '../backend/types.js';
import type { ActorRef } from '../core/actor.js';
import { unknownKeyRule } from '../core/closest-name.js';
import { isUuid, newJobId } from '../core/ids.js';
import { BatchAbortedError } from '../errors/batch-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { StreamingBatchError } from '../errors/streaming-batch-error.js';
import {
  BATCH_OPTION_KEYS,
  checkBatchExtras,
  hasBatchExtras,
  MAX_BATCH_SIZE,
  type BatchOptions,
  type EnqueueItem,
} from './batch-items.js';
import type { BatchEnqueuer } from './batch-enqueuer.js';
import { BatchHandle } from './batch-handle.js';
import { checkConnection } from './enqueue-options.js';
import type { JobHandle } from './job-handle.js';

/** `enqueueBatchStreaming`'s default (and largest) chunk: `MAX_BATCH_SIZE` items. */
export const DEFAULT_STREAMING_CHUNK_SIZE = MAX_BATCH_SIZE;

/** What `onProgress` is told after each chunk is written. */
export interface StreamingBatchProgress {
  /** Items written so far (each a new job, or the existing job it deduplicated to). */
  written: number;
  /** The batch's id. */
  batchId: string;
}

/** Options of `enqueueBatchStreaming`: those of `enqueueBatch`, and the chunking. */
export interface StreamingBatchOptions extends BatchOptions {
  /** Items per write, 1–1000. Default 1000. */
  chunkSize?: number;
  /**
   * Called after each chunk is written, and awaited before the next is written (a slow callback
   * slows the stream down). An exception from it stops the stream like any other failure.
   */
  onProgress?: (progress: StreamingBatchProgress) => void | Promise<void>;
}

const WHAT = 'enqueueBatchStreaming';
const STREAMING_OPTION_KEYS: readonly string[] = [...BATCH_OPTION_KEYS, 'chunkSize', 'onProgress'];

/** A chunk read from the input, validated and built. */
interface PreparedChunk {
  /** Items in the chunk (0: the input is exhausted). */
  count: number;
  args: EnqueueArgs[];
  refs: ActorRef<unknown, unknown>[];
  /** The input said it is exhausted: no chunk follows this one. */
  last: boolean;
}

/** A failure tied to an item: the invalid one, or the one the input failed to produce. */
class ItemFailure {
  constructor(
    readonly index: number,
    readonly cause: unknown,
  ) {}
}

/**
 * Reads the input a chunk at a time: synchronously (no promise per item) from an `Iterable`, with
 * an `await` per item from an `AsyncIterable`.
 */
class ChunkReader {
  private readonly sync: Iterator<EnqueueItem> | null;
  private readonly async: AsyncIterator<EnqueueItem> | null;
  /** The input returned `done`. */
  done = false;

  constructor(items: Iterable<EnqueueItem> | AsyncIterable<EnqueueItem>) {
    const source = items as Partial<Iterable<EnqueueItem> & AsyncIterable<EnqueueItem>>;
    const asyncIterator = source[Symbol.asyncIterator];
    if (typeof asyncIterator === 'function') {
      this.async = asyncIterator.call(source);
      this.sync = null;
    } else {
      this.sync = (source as Iterable<EnqueueItem>)[Symbol.iterator]();
      this.async = null;
    }
  }

  /**
   * Up to `n` items, fewer only when the input ends.
   * @throws ItemFailure when the input throws (its index: `base` + the items read)
   */
  read(n: number, base: number): EnqueueItem[] | Promise<EnqueueItem[]> {
    const out: EnqueueItem[] = [];
    if (this.sync) {
      try {
        while (out.length < n) {
          const r = this.sync.next();
          if (r.done) {
            this.done = true;
            break;
          }
          out.push(r.value);
        }
      } catch (err) {
        throw new ItemFailure(base + out.length, err);
      }
      return out;
    }
    return this.readAsync(out, n, base);
  }

  private async readAsync(out: EnqueueItem[], n: number, base: number): Promise<EnqueueItem[]> {
    const it = this.async!;
    try {
      while (out.length < n) {
        const r = await it.next();
        if (r.done) {
          this.done = true;
          break;
        }
        out.push(r.value);
      }
    } catch (err) {
      throw new ItemFailure(base + out.length, err);
    }
    return out;
  }

  /** Lets a generator run its `finally` when the stream stops early (best effort). */
  async close(): Promise<void> {
    if (this.done) return;
    this.done = true;
    try {
      await (this.sync ?? this.async)!.return?.();
    } catch {
      // The input's own cleanup failing does not change the outcome of the stream.
    }
  }
}

/** The streaming options, checked before the input is touched. */
function checkStreamingOptions(
  items: unknown,
  options: StreamingBatchOptions,
): { batchId: string; chunkSize: number } {
  const source = items as Partial<Iterable<unknown> & AsyncIterable<unknown>> | null;
  if (
    source === null ||
    typeof source !== 'object' ||
    (typeof source[Symbol.iterator] !== 'function' && typeof source[Symbol.asyncIterator] !== 'function')
  )
    throw new InvalidArgumentError(
      `${WHAT}.items`,
      items,
      'must be an Iterable or AsyncIterable of batch items (an array, a generator, ...)',
    );
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError(`${WHAT}.options`, options, 'must be an object');
  for (const key of Object.keys(options))
    if (!STREAMING_OPTION_KEYS.includes(key))
      throw new InvalidArgumentError(
        `${WHAT}.options.${key}`,
        (options as Record<string, unknown>)[key],
        unknownKeyRule(key, STREAMING_OPTION_KEYS, `an option of ${WHAT}`),
      );
  checkConnection(options.connection, `${WHAT}.connection`);
  checkBatchExtras(WHAT, options);
  const chunkSize = options.chunkSize ?? DEFAULT_STREAMING_CHUNK_SIZE;
  if (!Number.isSafeInteger(chunkSize) || chunkSize < 1 || chunkSize > MAX_BATCH_SIZE)
    throw new InvalidArgumentError(
      `${WHAT}.chunkSize`,
      options.chunkSize,
      `must be a whole number from 1 to ${MAX_BATCH_SIZE}`,
    );
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function')
    throw new InvalidArgumentError(`${WHAT}.onProgress`, options.onProgress, 'must be a function');
  let batchId = newJobId();
  if (options.batchId !== undefined) {
    if (!isUuid(options.batchId))
      throw new InvalidArgumentError(`${WHAT}.batchId`, options.batchId, 'must be a UUID');
    batchId = options.batchId.toLowerCase();
  }
  return { batchId, chunkSize };
}

/** The global index an item validation error names (`items[N]...`), or `fallback`. */
function indexNamedBy(err: unknown, fallback: number): number {
  const field = (err as { field?: unknown }).field;
  const text = typeof field === 'string' ? field : err instanceof Error ? err.message : '';
  const m = /^items\[(\d+)\]/.exec(text);
  return m ? Number(m[1]) : fallback;
}

/**
 * `TaskQ.enqueueBatchStreaming`: reads `items` a chunk at a time, validates and writes each chunk
 * while the next is read and validated (at most two chunks in memory, no handles kept).
 */
export async function enqueueBatchStreaming(
  enqueuer: BatchEnqueuer,
  items: Iterable<EnqueueItem> | AsyncIterable<EnqueueItem>,
  options: StreamingBatchOptions,
): Promise<BatchHandle> {
  const { batchId, chunkSize } = checkStreamingOptions(items, options);
  const { backend, logger } = enqueuer.d;
  const connection = options.connection ? { connection: options.connection } : {};
  const withRow = hasBatchExtras(options);
  const reader = new ChunkReader(items);

  const prepare = async (base: number): Promise<PreparedChunk> => {
    const chunk = await reader.read(chunkSize, base);
    if (chunk.length === 0) return { count: 0, args: [], refs: [], last: true };
    try {
      const { args, refs } = await enqueuer.prepare(
        WHAT,
        chunk,
        MAX_BATCH_SIZE,
        { batchId },
        undefined,
        base,
      );
      return { count: chunk.length, args, refs, last: reader.done };
    } catch (err) {
      throw new ItemFailure(indexNamedBy(err, base), err);
    }
  };

  let written = 0;
  let row: BatchRow | null = null;
  let finalizerHandle: JobHandle<unknown> | null = null;
  let sealed = false;
  let pending: Promise<PreparedChunk> | null = null;
  try {
    let chunk: PreparedChunk;
    try {
      chunk = await prepare(0);
    } catch (err) {
      throw err instanceof ItemFailure ? err.cause : err;
    }
    if (chunk.count === 0)
      throw new InvalidArgumentError(`${WHAT}.items`, items, 'must yield at least one item');
    const finalizer = withRow ? await enqueuer.finalizerArgs(WHAT, options) : null;
    try {
      for (;;) {
        const base = written;
        const write: Promise<unknown> = withRow
          ? writeChunk(
              enqueuer,
              {
                batchId,
                create:
                  written === 0
                    ? {
                        queue: chunk.args[0]!.queue,
                        failureThreshold: options.failurePolicy?.failureThreshold ?? null,
                        finalizer: finalizer?.args ?? null,
                      }
                    : undefined,
                children: chunk.args,
                seal: chunk.last,
              },
              connection,
            )
          : enqueuer.sendBatch(chunk.args, batchId, () =>
              enqueuer.refusals(backend.enqueueBatch(chunk.args, connection), 'batch'),
            );
        // The next chunk is read and validated while this one is written.
        pending = chunk.last ? null : prepare(base + chunk.count);
        pending?.catch(() => undefined);
        let out: unknown;
        try {
          out = await write;
        } catch (err) {
          throw new ItemFailure(base, err);
        }
        if (withRow) {
          const result = out as BatchWriteResult;
          row = result.batch;
          if (base === 0 && result.finalizer && finalizer)
            finalizerHandle = enqueuer.d.handleOf(
              result.finalizer,
              result.finalizer.id !== finalizer.args.id,
              finalizer.ref.resultSchema,
            );
        }
        written += chunk.count;
        sealed = chunk.last;
        // The policy gave up while the stream ran: more children would run for an aborted batch.
        if (row?.status === 'aborted' && !chunk.last)
          throw new ItemFailure(
            written,
            new BatchAbortedError(batchId, row.consecutiveFailures, row.failureThreshold),
          );
        try {
          await options.onProgress?.({ written, batchId });
        } catch (err) {
          throw new ItemFailure(written, err);
        }
        if (pending === null) break;
        chunk = await pending;
        pending = null;
        if (chunk.count === 0) break;
      }
      if (withRow && !sealed) {
        try {
          row = (await writeChunk(enqueuer, { batchId, children: [], seal: true }, connection)).batch;
        } catch (err) {
          throw new ItemFailure(written, err);
        }
        sealed = true;
      }
    } catch (err) {
      if (pending) await pending.catch(() => undefined);
      const failure = err instanceof ItemFailure ? err : new ItemFailure(written, err);
      // Nothing written: the failure is the caller's to see as is, as `enqueueBatch` would throw it.
      if (written === 0) throw failure.cause;
      const nowSealed = withRow ? sealed || (await sealAfterFailure(enqueuer, batchId, connection)) : null;
      logger.warn(
        { batchId, written, failedIndex: failure.index, sealed: nowSealed, err: failure.cause },
        'batch-streaming-failed',
      );
      throw new StreamingBatchError(batchId, written, failure.index, nowSealed, failure.cause);
    }
  } finally {
    await reader.close();
  }
  logger.debug(
    { batchId, size: written, finalizerJobId: row?.finalizerJobId ?? null },
    'batch-streaming-enqueued',
  );
  return new BatchHandle(backend, batchId, [], written, finalizerHandle, row);
}

/** One `writeBatch` of the stream, counted and traced as `enqueueBatch`'s. */
function writeChunk(
  enqueuer: BatchEnqueuer,
  w: BatchWrite,
  connection: { connection?: BatchOptions['connection'] },
): Promise<BatchWriteResult> {
  const write = (): Promise<BatchWriteResult> =>
    enqueuer.refusals(enqueuer.d.backend.writeBatch(w, connection), 'batch');
  return w.children.length === 0
    ? write()
    : enqueuer.sendBatch(w.children as EnqueueArgs[], w.batchId, write);
}

/**
 * Seals the batch after a failure so that it completes once the children written end. Best effort:
 * in a caller's transaction that the failure aborted, the seal fails too (and the batch rolls back
 * with the transaction anyway).
 */
async function sealAfterFailure(
  enqueuer: BatchEnqueuer,
  batchId: string,
  connection: { connection?: BatchOptions['connection'] },
): Promise<boolean> {
  try {
    await enqueuer.d.backend.writeBatch({ batchId, children: [], seal: true }, connection);
    return true;
  } catch (err) {
    enqueuer.d.logger.warn({ batchId, err }, 'batch-streaming-seal-failed');
    return false;
  }
}
