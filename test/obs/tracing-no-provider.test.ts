/**
 * Tracing on (`otelEnabled` true, the default) with no tracer provider registered: the client and
 * the worker start no span (every one would be the API's non-recording span), store no ids, and
 * follow a provider registered while they run. A context propagated into the process without a
 * provider still has its ids stored on the jobs enqueued under it, as the API's span would.
 */
import { context, ROOT_CONTEXT, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { tracerRegistered } from '../../src/obs/tracing/taskq-tracer.js';
import type { Worker } from '../../src/worker/worker.js';
import { registerMemoryTracing, spanJson, unregisterMemoryTracing } from '../fixtures/otel-memory.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';

/** What each run of the handler saw of its span. */
const seen: { recording: boolean; valid: boolean }[] = [];
const job = actor({ name: 'np_job', queue: 'noprov' }, (_p: { n: number }, ctx) => {
  seen.push({ recording: ctx.span.isRecording(), valid: trace.isSpanContextValid(ctx.span.spanContext()) });
});

let db: TestSchema;
let tq: TaskQ;
let worker: Worker;

beforeAll(async () => {
  db = await migratedSchema('noprov');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  worker = await startTestWorker([job], db.schema, { queues: ['noprov'] });
});
afterAll(async () => {
  await worker?.stop();
  await tq?.close();
  await db.drop();
});

/** Enqueues one job, waits for it, and returns the ids stored on its row. */
async function runOne(n: number): Promise<{ traceId: string | null; spanId: string | null }> {
  const h = await tq.enqueue(job, { n });
  await tq.waitForTerminal(h.jobId, 10_000);
  const row = (await tq.getRow(h.jobId))!;
  return { traceId: row.traceId, spanId: row.spanId };
}

describe('tracing on, no tracer provider registered', () => {
  it('starts no span and stores no ids; a provider registered later is followed, and one removed is dropped', async () => {
    expect(tracerRegistered()).toBe(false);
    expect(await runOne(1)).toEqual({ traceId: null, spanId: null });
    expect(seen.at(-1)).toEqual({ recording: false, valid: false });

    const sdk = registerMemoryTracing();
    try {
      expect(tracerRegistered()).toBe(true);
      const ids = await runOne(2);
      expect(ids.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(seen.at(-1)).toEqual({ recording: true, valid: true });
      const spans = sdk.exporter.getFinishedSpans().map(spanJson);
      const send = spans.find((s) => s.kind === SpanKind.PRODUCER)!;
      expect(send.spanId).toBe(ids.spanId);
      const process = spans.find((s) => s.name === 'process np_job')!;
      expect(process.links).toEqual([{ traceId: ids.traceId, spanId: ids.spanId }]);
    } finally {
      await unregisterMemoryTracing(sdk.provider);
    }

    expect(tracerRegistered()).toBe(false);
    expect(await runOne(3)).toEqual({ traceId: null, spanId: null });
    expect(seen.at(-1)).toEqual({ recording: false, valid: false });
  });

  it("stores the ids of a context propagated into the process, as the API's span would", async () => {
    const remote = {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    };
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    try {
      expect(tracerRegistered()).toBe(false);
      const h = await context.with(trace.setSpanContext(ROOT_CONTEXT, remote), () =>
        tq.enqueue(job, { n: 4 }),
      );
      const row = (await tq.getRow(h.jobId))!;
      expect({ traceId: row.traceId, spanId: row.spanId }).toEqual({
        traceId: remote.traceId,
        spanId: remote.spanId,
      });
      await tq.waitForTerminal(h.jobId, 10_000);
    } finally {
      context.disable();
    }
  });
});
