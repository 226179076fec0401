/**
 * Issue 63, tracing, in one process: what a handler enqueues runs under its attempt's span (the
 * sub-job's `send` span is its child, and the sub-job's attempt links to that), and
 * `otelEnabled: false` on the client and the worker creates no span at all.
 */
import { SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TaskQ } from '../../src/client/taskq.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { actor } from '../../src/core/actor.js';
import {
  registerMemoryTracing,
  spanJson,
  unregisterMemoryTracing,
  type SpanJson,
} from '../fixtures/otel-memory.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';

let db: TestSchema;
let tq: TaskQ;
let sdk: ReturnType<typeof registerMemoryTracing>;

beforeAll(async () => {
  sdk = registerMemoryTracing();
  db = await migratedSchema('trin');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq.close();
  await db.drop();
  await unregisterMemoryTracing(sdk.provider);
});
beforeEach(() => sdk.exporter.reset());

const spans = (): SpanJson[] => sdk.exporter.getFinishedSpans().map(spanJson);

describe('tracing in one process', () => {
  it('runs the handler under its process span: a sub-job enqueued there links back to it', async () => {
    const seen: { recording: boolean; activeIsCtxSpan: boolean }[] = [];
    const child = actor({ name: 'trace_child', queue: 'tin', payload: z.object({}) }, () => undefined);
    const parent = actor({ name: 'trace_parent', queue: 'tin', payload: z.object({}) }, async (_p, ctx) => {
      seen.push({ recording: ctx.span.isRecording(), activeIsCtxSpan: trace.getActiveSpan() === ctx.span });
      return (await tq.enqueue(child, {})).jobId;
    });
    const worker = await startTestWorker([parent, child], db.schema, { queues: ['tin'] });
    try {
      const job = await tq.enqueue(parent, {});
      const done = await tq.waitForTerminal(job.jobId, 10_000);
      const childId = done.result as string;
      await tq.waitForTerminal(childId, 10_000);
    } finally {
      await worker.stop();
    }
    expect(seen).toEqual([{ recording: true, activeIsCtxSpan: true }]);
    const all = spans();
    const parentProcess = all.find((s) => s.name === 'process trace_parent')!;
    const childProcess = all.find((s) => s.name === 'process trace_child')!;
    const childSend = all.find(
      (s) => s.kind === SpanKind.PRODUCER && s.attributes['taskq.job.actor'] === 'trace_child',
    )!;
    // The sub-job's send span is a child of the parent's attempt span, in its trace.
    expect(childSend.parentSpanId).toBe(parentProcess.spanId);
    expect(childSend.traceId).toBe(parentProcess.traceId);
    // And the sub-job's attempt links to it.
    expect(childProcess.links).toEqual([{ traceId: childSend.traceId, spanId: childSend.spanId }]);
    expect(childProcess.parentSpanId).toBeNull();
  });

  it('traces ctx.jobs children under the handler: buffered and autonomous, each linked from its attempt', async () => {
    const child = actor(
      { name: 'trace_sub_child', queue: 'tsub', payload: z.object({ k: z.string() }) },
      () => 'ok',
    );
    const parent = actor({ name: 'trace_sub_parent', queue: 'tsub' }, async (_p, ctx) => {
      const buffered = await ctx.jobs.enqueue(child, { k: 'buffered' });
      const autonomous = await ctx.jobs.enqueue(child, { k: 'autonomous' }, { autonomous: true });
      return [buffered.jobId, autonomous.jobId];
    });
    const worker = await startTestWorker([parent, child], db.schema, { queues: ['tsub'] });
    try {
      const job = await tq.enqueue(parent, null);
      const ids = (await tq.waitForTerminal(job.jobId, 10_000)).result as string[];
      for (const id of ids) await tq.waitForTerminal(id, 10_000);
    } finally {
      await worker.stop();
    }
    const all = spans();
    const parentProcess = all.find((s) => s.name === 'process trace_sub_parent')!;
    const sends = all.filter(
      (s) => s.kind === SpanKind.PRODUCER && s.attributes['taskq.job.actor'] === 'trace_sub_child',
    );
    expect(sends.length).toBe(2);
    const processes = all.filter((s) => s.name === 'process trace_sub_child');
    for (const send of sends) {
      expect(send.parentSpanId).toBe(parentProcess.spanId);
      expect(send.traceId).toBe(parentProcess.traceId);
    }
    expect(processes.map((p) => p.links[0]?.spanId).sort()).toEqual(sends.map((s) => s.spanId).sort());
  });

  it('covers payload validation: a payload the worker refuses ends the span in ERROR', async () => {
    // Same actor name: the client's schema accepts the payload, the worker's refuses it.
    const loose = actor(
      { name: 'trace_strict', queue: 'tstrict', payload: z.object({ n: z.number() }) },
      () => 0,
    );
    const strict = actor(
      {
        name: 'trace_strict',
        queue: 'tstrict',
        payload: z.object({ n: z.number().min(10) }),
        retry: { maxAttempts: 1 },
      },
      () => 0,
    );
    const worker = await startTestWorker([strict], db.schema, { queues: ['tstrict'] });
    try {
      const job = await tq.enqueue(loose, { n: 1 });
      expect((await tq.waitForTerminal(job.jobId, 10_000)).status).toBe('failed');
    } finally {
      await worker.stop();
    }
    const span = spans().find((s) => s.name === 'process trace_strict')!;
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.attributes['taskq.job.outcome']).toBe('failed');
    expect(span.events.find((e) => e.name === 'exception')?.attributes['exception.type']).toBe(
      'PayloadValidationError',
    );
  });

  it('creates no span with otelEnabled false on the client and the worker; ctx.span records nothing', async () => {
    const quiet = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema, otelEnabled: false });
    let ctxSpan: Span | null = null;
    const silent = actor({ name: 'trace_silent', queue: 'tquiet', payload: z.object({}) }, (_p, ctx) => {
      ctxSpan = ctx.span;
    });
    const worker = await startTestWorker([silent], db.schema, { queues: ['tquiet'], otelEnabled: false });
    try {
      const job = await quiet.enqueue(silent, {});
      await quiet.enqueueBatch([{ actor: silent, payload: {} }]);
      const row = await quiet.waitForTerminal(job.jobId, 10_000);
      expect(row.status).toBe('succeeded');
      expect({ traceId: row.traceId, spanId: row.spanId }).toEqual({ traceId: null, spanId: null });
    } finally {
      await worker.stop();
      await quiet.close();
    }
    expect(ctxSpan).not.toBeNull();
    expect(ctxSpan!.isRecording()).toBe(false);
    expect(trace.isSpanContextValid(ctxSpan!.spanContext())).toBe(false);
    // The SDK is registered, yet nothing reached it.
    expect(spans()).toEqual([]);
  });

  it('refuses an otelEnabled that is not a boolean, naming the option', async () => {
    await expect(
      TaskQ.open({ dsn: TEST_DSN, schema: db.schema, otelEnabled: 'no' as unknown as boolean }),
    ).rejects.toThrow(InvalidArgumentError);
    await expect(
      TaskQ.open({ dsn: TEST_DSN, schema: db.schema, otelEnabled: 'no' as unknown as boolean }),
    ).rejects.toThrow(/TaskQ\.open\.otelEnabled/);
  });
});
